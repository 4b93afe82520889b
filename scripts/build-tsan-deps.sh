#!/usr/bin/env bash
# Builds Debian's own Abseil (the source package of the installed libabsl-dev, Debian's patches
# applied) with clang 14 and -fsanitize=thread, as shared libraries with Debian's SONAMEs, into a
# cache outside the tree. TSan runs put its lib/ first on LD_LIBRARY_PATH (scripts/sanitize.sh), so
# that absl::Mutex, ours and the one inside Debian's gRPC, is seen by TSan instead of making every
# access it guards look like a race (docs/sanitizers.md).
# Idempotent: prints the lib directory and does nothing else when the build for this version exists.
# No root-wide change: the deb-src list, apt's lists and its cache live under the cache directory.
# Usage: scripts/build-tsan-deps.sh            (prints the directory to put on LD_LIBRARY_PATH)
set -euo pipefail
cache="${TJ_TSAN_DEPS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trainingjob-operator/tsan-deps}"
version="$(dpkg-query -W -f='${Version}' libabsl-dev 2>/dev/null || true)"
if [ -z "$version" ]; then
  echo "build-tsan-deps: libabsl-dev is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
prefix="$cache/abseil-$version"
if [ -f "$prefix/.done" ]; then
  echo "$prefix/lib"
  exit 0
fi
for tool in clang-14 clang++-14 dpkg-source cmake ninja; do
  command -v "$tool" > /dev/null || { echo "build-tsan-deps: $tool is missing" >&2; exit 1; }
done

work="$cache/work"
apt_dir="$work/apt"
rm -rf "$prefix"
# An interrupted build resumes: the source and the configured tree are kept until it finishes.
if [ ! -f "$work/build/build.ninja" ]; then
  rm -rf "$work"
  mkdir -p "$apt_dir/sources" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  # The image's own deb822 sources (same mirror, suites and keyring), as deb-src.
  found=0
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    grep -q '^Types:.*\bdeb\b' "$f" || continue
    sed -E 's/^Types:.*/Types: deb-src/' "$f" > "$apt_dir/sources/$(basename "$f")"
    found=1
  done
  if [ "$found" = 0 ]; then
    echo "build-tsan-deps: no deb822 file in /etc/apt/sources.list.d to derive a deb-src entry from" >&2
    exit 1
  fi
  apt_opts=(-q -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources"
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
  apt-get "${apt_opts[@]}" update > "$work/apt-update.log" 2>&1 \
    || { cat "$work/apt-update.log" >&2; exit 1; }
  (cd "$work" && apt-get "${apt_opts[@]}" source "abseil=$version" > "$work/apt-source.log" 2>&1) \
    || { cat "$work/apt-source.log" >&2; exit 1; }
  src="$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'abseil-*' | head -1)"
  # Debian's patches change absl/base/options.h (absl::string_view, not std::string_view): the
  # instrumented build must have the very ABI the installed headers describe.
  if ! diff -q "$src/absl/base/options.h" /usr/include/absl/base/options.h > /dev/null; then
    echo "build-tsan-deps: $src/absl/base/options.h differs from the installed header" >&2
    exit 1
  fi
  # Debian's debian/rules: CMAKE_CXX_STANDARD=17, BUILD_SHARED_LIBS=ON (its shared half).
  CC=clang-14 CXX=clang++-14 cmake -S "$src" -B "$work/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON \
    -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
    -DCMAKE_C_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" > "$work/configure.log"
fi
cmake --build "$work/build" -j"${TJ_JOBS:-$(nproc)}"
cmake --install "$work/build" > /dev/null
# Same SONAMEs as the installed libraries, or the loader would not substitute them.
for lib in synchronization base raw_hash_set; do
  want="$(objdump -p "/usr/lib/$(gcc -print-multiarch)/libabsl_$lib.so" | awk '/SONAME/ {print $2}')"
  got="$(objdump -p "$prefix/lib/libabsl_$lib.so" | awk '/SONAME/ {print $2}')"
  if [ "$want" != "$got" ]; then
    echo "build-tsan-deps: libabsl_$lib SONAME $got, Debian's is $want" >&2
    exit 1
  fi
done
rm -rf "$work"
touch "$prefix/.done"
echo "$prefix/lib"
