#!/usr/bin/env python3
"""Checks a docker/Dockerfile.* without a Docker engine (none runs on the development machines).

  dockerfile_test.py --dockerfile F --source-dir S --build-dir B --binary NAME=PATH...

The Dockerfile's build stage works in /src and builds into /src/build with scripts/build.sh, on the
same Debian release as this machine, so after a build here:
  - every source of a `COPY --from=build` exists (/src/build/X -> B/X, /src/X -> S/X, other
    absolute paths -> the same path here: files installed by scripts/install-deps.sh);
  - the binaries copied from /src/build/bin are exactly the --binary ones, the files ctest built
    and tested (same paths), and the ENTRYPOINT is one of them;
  - every shared library those binaries load comes from a Debian package the final stage installs;
  - the final stage is debian:bookworm-slim running as the non-root user 65532, the build stage
    debian:bookworm using scripts/install-deps.sh and scripts/build.sh;
  - the image carries the project's LICENSE and NOTICE (/usr/share/doc/trainingjob-operator/) and
    says its license in the OCI label org.opencontainers.image.licenses="Apache-2.0";
  - .dockerignore keeps build trees and .git out of the context, and nothing the build needs.
Exit status 0 when all hold; every failure is printed, naming the Dockerfile line.
"""
import argparse
import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docker"))
from dockerfile_stages import logical_lines, map_build_path, stages  # noqa: E402

failures = []


def fail(message):
    failures.append(message)


def packages_of(libraries):
    """{library: Debian package owning it, or None}, in one dpkg query (each query reads the
    whole database). usr-merge: a library may be registered as /lib/... or /usr/lib/..."""
    def spellings(library):
        return [library, library[4:] if library.startswith("/usr/") else "/usr" + library]
    candidates = sorted({c for library in libraries for c in spellings(library)})
    owners = {}
    if candidates:
        result = subprocess.run(["dpkg", "-S"] + candidates, capture_output=True, text=True)
        for line in result.stdout.splitlines():  # "pkg[:arch][, pkg2...]: /path"
            package, _, path = line.partition(": ")
            owners[path.strip()] = package.split(",")[0].split(":")[0].strip()
    return {library: next((owners[c] for c in spellings(library) if c in owners), None)
            for library in libraries}


def shared_libraries(binary):
    result = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"ldd {binary} failed: {result.stderr.strip()}")
        return []
    libraries = []
    for line in result.stdout.splitlines():
        if "=> not found" in line:
            fail(f"{binary}: {line.strip()}")
        match = re.search(r"=>\s+(\S+)\s+\(", line)
        if match:
            libraries.append(match.group(1))
    return libraries


def apt_packages(stage_instructions):
    packages = set()
    for _, text in stage_instructions:
        if not text.upper().startswith("RUN "):
            continue
        for command in re.split(r"&&|;", text[4:]):
            words = shlex.split(command)
            if "apt-get" in words and "install" in words:
                after = words[words.index("install") + 1:]
                packages.update(w for w in after if not w.startswith("-"))
    return packages


def check_dockerignore(source_dir):
    path = os.path.join(source_dir, ".dockerignore")
    if not os.path.exists(path):
        fail(".dockerignore is missing: the build context would include build trees and .git")
        return
    patterns = [l.strip() for l in open(path) if l.strip() and not l.startswith("#")]
    def ignored(name):
        return any(fnmatch.fnmatch(name, p) for p in patterns)
    for name in (".git", "build", "build-asan"):
        if not ignored(name):
            fail(f".dockerignore does not exclude {name}")
    for name in ("scripts", "CMakeLists.txt", "api", "operator", "crds", "examples", "proto"):
        if ignored(name):
            fail(f".dockerignore excludes {name}, which the build stage needs")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dockerfile", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--binary", action="append", default=[], help="NAME=PATH ctest built")
    args = parser.parse_args()
    expected = dict(b.split("=", 1) for b in args.binary)
    name = os.path.relpath(args.dockerfile, args.source_dir)

    all_stages = stages(logical_lines(args.dockerfile))
    if len(all_stages) != 2:
        fail(f"{name}: expected 2 stages (build, runtime), found {len(all_stages)}")
        return
    (build_line, build_image, build_alias, build_body), (final_line, final_image, _, final_body) = all_stages
    if build_image != "debian:bookworm" or build_alias != "build":
        fail(f"{name}:{build_line}: the build stage must be `FROM debian:bookworm AS build`")
    if final_image != "debian:bookworm-slim":
        fail(f"{name}:{final_line}: the final stage must be FROM debian:bookworm-slim")
    build_text = "\n".join(t for _, t in build_body)
    for script in ("scripts/install-deps.sh", "scripts/build.sh"):
        if script not in build_text:
            fail(f"{name}: the build stage does not run {script}")
    if "BUILD_DIR=/src/build" not in build_text:
        fail(f"{name}: the build stage must build into /src/build (BUILD_DIR=/src/build)")
    # `scripts/build.sh T...` builds only those targets: then every binary shipped must be one.
    built_targets = None
    for _, text in build_body:
        words = shlex.split(text) if "scripts/build.sh" in text else []
        if "scripts/build.sh" in words:
            built_targets = words[words.index("scripts/build.sh") + 1:]

    users = [t for _, t in final_body if t.upper().startswith("USER ")]
    if not users or users[-1].split()[1].split(":")[0] != "65532":
        fail(f"{name}: the final stage must end as USER 65532 (non-root)")

    shipped = {}  # binary name -> path in the build tree
    destinations = []
    for number, text in final_body:
        words = text.split()
        if words[0].upper() != "COPY":
            continue
        if "--from=build" not in words:
            fail(f"{name}:{number}: the final stage copies only from the build stage: {text}")
            continue
        paths = [w for w in words[1:] if not w.startswith("--")]
        sources, destination = paths[:-1], paths[-1]
        for source in sources:
            local = map_build_path(source, args.source_dir, args.build_dir)
            if not os.path.exists(local):
                fail(f"{name}:{number}: COPY source {source} does not exist after a build ({local})")
            if source.startswith("/src/build/bin/"):
                binary = os.path.basename(source)
                shipped[binary] = local
                destinations.append(os.path.join(destination, binary)
                                    if destination.endswith("/") else destination)
            else:
                destinations.append(destination)

    for binary in shipped:
        if built_targets and binary not in built_targets:
            fail(f"{name}: ships {binary}, but the build stage's scripts/build.sh builds only "
                 f"{' '.join(built_targets)}")
    for binary, local in shipped.items():
        if binary not in expected:
            fail(f"{name}: ships {binary}, which this test was not told ctest built "
                 f"(add it to tests/docker/CMakeLists.txt)")
        elif os.path.realpath(expected[binary]) != os.path.realpath(local):
            fail(f"{name}: ships {local}, but ctest built and tested {expected[binary]}")
    for binary in expected:
        if binary not in shipped:
            fail(f"{name}: does not ship {binary}")

    entrypoints = [t for _, t in final_body if t.upper().startswith("ENTRYPOINT")]
    if not entrypoints:
        fail(f"{name}: no ENTRYPOINT")
    else:
        entry = json.loads(entrypoints[-1].split(None, 1)[1])[0]
        if entry not in destinations:
            fail(f"{name}: ENTRYPOINT {entry} is not a file the final stage copies")

    for notice in ("LICENSE", "NOTICE"):
        if f"/usr/share/doc/trainingjob-operator/{notice}" not in destinations:
            fail(f"{name}: the final stage does not copy /src/{notice} to "
                 f"/usr/share/doc/trainingjob-operator/{notice}")
    labels = " ".join(t for _, t in final_body if t.upper().startswith("LABEL "))
    if 'org.opencontainers.image.licenses="Apache-2.0"' not in labels:
        fail(f'{name}: no LABEL org.opencontainers.image.licenses="Apache-2.0" in the final stage')

    installed = apt_packages(final_body)
    loaded = {binary: shared_libraries(local)
              for binary, local in sorted(shipped.items()) if os.path.exists(local)}
    owner = packages_of({library for libraries in loaded.values() for library in libraries})
    for binary, libraries in loaded.items():
        for library in libraries:
            package = owner[library]
            if package is None:
                fail(f"{name}: {binary} loads {library}, which no Debian package owns")
            elif package != "libc6" and package not in installed:  # libc6 is Essential
                fail(f"{name}: {binary} loads {library} from {package}, "
                     f"which the final stage does not apt-get install")

    check_dockerignore(args.source_dir)


if __name__ == "__main__":
    main()
    for message in failures:
        print("FAIL:", message)
    if failures:
        sys.exit(1)
    print("ok:", sys.argv[sys.argv.index("--dockerfile") + 1])
