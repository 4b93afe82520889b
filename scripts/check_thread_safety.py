"""Runs clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety on each project source file.

Called by scripts/check-thread-safety.sh; see there. Only thread-safety diagnostics are enabled:
other warnings are g++'s job in the real build, and clang's differ.
"""
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys

CLANG_CANDIDATES = ("clang++-14", "clang++")
FLAGS = ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Wthread-safety-beta",
         "-Werror=thread-safety", "-Werror=thread-safety-beta"]


def clang_command(entry, clang, build_dir):
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    if os.path.basename(args[0]) == "ccache":
        args = args[1:]
    out, skip = [clang], False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg == "-o":
            skip = True
            continue
        # g++-only and codegen flags: warnings (clang's own set is chosen above), optimisation.
        if arg.startswith(("-W", "-O", "-g", "-fno-semantic-interposition")) or arg == "-c":
            continue
        out.append(arg)
    return out + FLAGS


def main():
    build_dir = sys.argv[1]
    only = sys.argv[2:]  # optional path substrings: check only the files that contain one
    root = os.getcwd()
    clang = next((c for c in CLANG_CANDIDATES if shutil.which(c)), None)
    if clang is None:
        sys.exit("check-thread-safety: clang++ not found (scripts/install-deps.sh installs clang-14)")
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    generated = os.path.abspath(build_dir) + os.sep
    own = [e for e in entries
           if e["file"].startswith(root + os.sep) and not e["file"].startswith(generated)
           and (not only or any(o in e["file"] for o in only))]

    def check(entry):
        result = subprocess.run(clang_command(entry, clang, build_dir), cwd=entry["directory"],
                                capture_output=True, text=True)
        return entry["file"], result.returncode, result.stderr

    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for path, code, stderr in pool.map(check, own):
            if code != 0:
                failed.append(path)
                sys.stderr.write(stderr)
    print(f"check-thread-safety: {len(own) - len(failed)}/{len(own)} files clean"
          f" ({clang}, -Wthread-safety as errors)")
    if failed:
        sys.exit(f"check-thread-safety: {len(failed)} file(s) fail: " + ", ".join(
            os.path.relpath(p, root) for p in failed))


if __name__ == "__main__":
    main()
