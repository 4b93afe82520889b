#!/usr/bin/env python3
"""Runs a built image (scripts/build-images.sh, buildah's storage) and checks what a cluster needs:

  image_test.py --image REF --source-dir S --budget-mib N [--binary NAME=PATH...]
                [--run "ARGS..."] [--data-from-manifest examples/X.yaml]

  - the image exists (else: run scripts/build-images.sh; a missing image fails, never skips);
  - its entrypoint runs with --help, inside the image, as the image's user, which is not root;
  - every ELF file in /usr/local/bin finds every shared library (ldd inside the image; a missing
    one is named);
  - each --run command (words after the image's entrypoint directory, e.g. "tjctl validate
    /manifests/digits.yaml"; S/examples is mounted read-only at /manifests) exits 0;
  - every --data= path a --data-from-manifest manifest passes is a readable file in the image;
  - an image built over the tested binaries (label dev.trainingjob.build=prebuilt) ships exactly
    the --binary files (a stale image fails, naming the binary);
  - its size (the unpacked root file system) is within --budget-mib, printed either way.
Exit status 0 when all hold; every failure is printed.
"""
import argparse
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

failures = []


def fail(message):
    failures.append(message)
    print("FAIL:", message, flush=True)


def buildah(*args, check=True):
    result = subprocess.run(["buildah", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"buildah {' '.join(args)}: {result.stderr.strip()}")
    return result


def run_in(container, argv, volumes=()):
    """argv inside the container as its configured user; (exit code, stdout + stderr)."""
    flags = ["--isolation", "chroot"]
    for volume in volumes:
        flags += ["-v", volume]
    result = buildah("run", *flags, container, "--", *argv, check=False)
    return result.returncode, result.stdout + result.stderr


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_bytes(root):
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                total += os.lstat(path).st_size
    return total


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def manifest_data_paths(manifest):
    with open(manifest) as f:
        return sorted(set(re.findall(r"--data=(/[^\s\"',\]]+)", f.read())))


def check(args, container, rootfs, config):
    user = config.get("User", "")
    entrypoint = config.get("Entrypoint") or []
    if user.split(":")[0] in ("", "0", "root"):
        fail(f"{args.image}: runs as root (USER {user!r}); the chart runs it with runAsNonRoot")
    code, out = run_in(container, ["id", "-u"])
    if code != 0 or out.strip() in ("", "0"):
        fail(f"{args.image}: a process in the image runs as uid {out.strip()!r} (exit {code}), not the non-root user")
    else:
        print(f"ok: processes run as uid {out.strip()} (USER {user})")

    if not entrypoint:
        fail(f"{args.image}: no ENTRYPOINT")
    else:
        code, out = run_in(container, entrypoint + ["--help"])
        if code != 0:
            fail(f"{args.image}: `{' '.join(entrypoint)} --help` exited {code}: {out.strip()[-2000:]}")
        else:
            print(f"ok: {' '.join(entrypoint)} --help")

    bin_dir = os.path.join(rootfs, "usr/local/bin")
    binaries = sorted(n for n in os.listdir(bin_dir) if is_elf(os.path.join(bin_dir, n))) \
        if os.path.isdir(bin_dir) else []
    if not binaries:
        fail(f"{args.image}: no program in /usr/local/bin")
    for name in binaries:
        code, out = run_in(container, ["ldd", f"/usr/local/bin/{name}"])
        missing = [line.strip().split()[0] for line in out.splitlines() if "not found" in line]
        if missing:
            fail(f"{args.image}: /usr/local/bin/{name} needs {', '.join(missing)}, not in the image "
                 f"(add its package to the final stage's apt-get install)")
        elif code != 0:
            fail(f"{args.image}: ldd /usr/local/bin/{name} exited {code}: {out.strip()}")
    if binaries and not any(f.startswith(args.image + ": /usr/local/bin/") for f in failures):
        print(f"ok: ldd finds every library of {', '.join(binaries)}")

    for command in args.run:
        argv = shlex.split(command)
        code, out = run_in(container, argv, volumes=[f"{args.source_dir}/examples:/manifests:ro"])
        if code != 0:
            fail(f"{args.image}: `{command}` exited {code}: {out.strip()[-2000:]}")
        else:
            print(f"ok: {command}")

    for manifest in args.data_from_manifest:
        paths = manifest_data_paths(os.path.join(args.source_dir, manifest))
        if not paths:
            fail(f"{manifest}: no --data= path found (the test reads the data paths from it)")
        for path in paths:
            code, out = run_in(container, ["test", "-f", path, "-a", "-r", path])
            if code != 0:
                fail(f"{args.image}: {manifest} reads {path}, which is not a readable file in the image")
            else:
                print(f"ok: {path} (read by {manifest}) is in the image")

    labels = config.get("Labels") or {}
    if labels.get("dev.trainingjob.build") == "prebuilt":
        for name, path in sorted(b.split("=", 1) for b in args.binary):
            inside = os.path.join(bin_dir, name)
            if not os.path.exists(inside):
                fail(f"{args.image}: does not ship /usr/local/bin/{name}")
            elif sha256(inside) != sha256(path):
                fail(f"{args.image}: /usr/local/bin/{name} is not {path}, the binary ctest tested "
                     f"(stale image: run scripts/build-images.sh)")

    size_mib = tree_bytes(rootfs) / (1 << 20)
    print(f"size: {args.image} {size_mib:.1f} MiB unpacked (budget {args.budget_mib} MiB)")
    if size_mib > args.budget_mib:
        fail(f"{args.image}: {size_mib:.1f} MiB is over its budget of {args.budget_mib} MiB "
             f"(tests/docker/CMakeLists.txt; raise it only with a reason in docker/README.md)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--image", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--budget-mib", type=float, required=True)
    parser.add_argument("--binary", action="append", default=[], help="NAME=PATH ctest built")
    parser.add_argument("--run", action="append", default=[])
    parser.add_argument("--data-from-manifest", action="append", default=[])
    args = parser.parse_args()

    if buildah("inspect", "--type", "image", args.image, check=False).returncode != 0:
        fail(f"image {args.image} is not in buildah's storage: build it with scripts/build-images.sh "
             f"(scripts/test.sh does, after the build)")
        return
    container = buildah("from", "--pull-never", "--name", f"tj-image-test-{os.getpid()}",
                        args.image).stdout.strip()
    try:
        rootfs = buildah("mount", container).stdout.strip()
        config = json.loads(buildah("inspect", "--type", "container", container).stdout)
        check(args, container, rootfs, config["OCIv1"]["config"])
    finally:
        buildah("umount", container, check=False)
        buildah("rm", container, check=False)


if __name__ == "__main__":
    main()
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok:", sys.argv[sys.argv.index("--image") + 1])
