#!/usr/bin/env python3
"""Reads the stages of a docker/Dockerfile.* and prepares a prebuilt build of its final stage.

Both Dockerfiles have two stages: `build` (the whole project compiled inside debian:bookworm) and
the runtime stage, which only COPYs --from=build. Compiling inside the image takes far longer than
CI can give on two cores, so scripts/build-images.sh (without --from-source) replaces the build
stage by one that holds the files ctest already tested, at the paths the runtime stage copies:

  dockerfile_stages.py prebuilt --dockerfile F --source-dir S --build-dir B --out DIR

writes DIR/Containerfile (`FROM scratch AS build`, `COPY . /`, then the final stage verbatim) and
DIR/context/ (each `COPY --from=build` source: /src/build/X from B/X, /src/X from S/X, any other
absolute path from this machine, which runs the same Debian release with the same packages).
A source that does not exist is an error naming the Dockerfile line.
tests/docker/dockerfile_test.py imports the parsing below.
"""
import argparse
import os
import shutil
import sys


def logical_lines(path):
    """(first line number, instruction text) with continuations joined and comments dropped."""
    out, current, start = [], "", 0
    with open(path) as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not current and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if current and line.lstrip().startswith("#"):
                continue  # a comment inside a continued instruction
            if not current:
                start = number
            if line.endswith("\\"):
                current += line[:-1] + " "
                continue
            current += line
            out.append((start, current.strip()))
            current = ""
    return out


def stages(instructions):
    """[(FROM line, base image, alias, [(line, instruction)...])]"""
    result = []
    for number, text in instructions:
        words = text.split()
        if words[0].upper() == "FROM":
            alias = words[3] if len(words) >= 4 and words[2].upper() == "AS" else ""
            result.append((number, words[1], alias, []))
        elif result:
            result[-1][3].append((number, text))
    return result


def map_build_path(path, source_dir, build_dir):
    if path == "/src/build" or path.startswith("/src/build/"):
        return os.path.join(build_dir, os.path.relpath(path, "/src/build"))
    if path == "/src" or path.startswith("/src/"):
        return os.path.join(source_dir, os.path.relpath(path, "/src"))
    return path


def copies_from_build(final_body):
    """[(line, [sources])] of the final stage's `COPY --from=build` instructions."""
    result = []
    for number, text in final_body:
        words = text.split()
        if words[0].upper() == "COPY" and "--from=build" in words:
            paths = [w for w in words[1:] if not w.startswith("--")]
            result.append((number, paths[:-1]))
    return result


def final_stage_text(dockerfile):
    """The Dockerfile from its last FROM line to the end, verbatim."""
    with open(dockerfile) as f:
        lines = f.readlines()
    last_from = max(i for i, line in enumerate(lines) if line.upper().startswith("FROM "))
    return "".join(lines[last_from:])


def link_or_copy(source, target):
    """A hard link where it can be (the binaries are hundreds of MB with their debug info).

    Of the file itself: a source that is a symbolic link (a checkout made of links) would
    otherwise enter the context as a link to a path outside it, which the build cannot read.
    """
    source = os.path.realpath(source)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def prebuilt(args):
    name = os.path.relpath(args.dockerfile, args.source_dir)
    all_stages = stages(logical_lines(args.dockerfile))
    if len(all_stages) < 2 or all_stages[0][2] != "build":
        sys.exit(f"{name}: expected a `build` stage and a runtime stage")
    context = os.path.join(args.out, "context")
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(context)
    missing = []
    for number, sources in copies_from_build(all_stages[-1][3]):
        for source in sources:
            local = map_build_path(source, args.source_dir, args.build_dir)
            if not os.path.exists(local):
                missing.append(f"{name}:{number}: COPY --from=build source {source} is missing ({local})")
                continue
            target = os.path.join(context, source.lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.isdir(local):
                shutil.copytree(local, target, symlinks=True, copy_function=link_or_copy)
            else:
                link_or_copy(local, target)
    if missing:
        sys.exit("\n".join(missing))
    with open(os.path.join(args.out, "Containerfile"), "w") as f:
        f.write(f"# Generated by docker/dockerfile_stages.py from {name}: its build stage replaced by\n"
                "# the files ctest tested, its final stage verbatim.\n"
                "FROM scratch AS build\nCOPY . /\n\n")
        f.write(final_stage_text(args.dockerfile))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prebuilt", help="Containerfile + context of the final stage from a build tree")
    p.add_argument("--dockerfile", required=True)
    p.add_argument("--source-dir", required=True)
    p.add_argument("--build-dir", required=True)
    p.add_argument("--out", required=True)
    args = parser.parse_args()
    prebuilt(args)


if __name__ == "__main__":
    main()
