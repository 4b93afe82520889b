#!/usr/bin/env bash
# The image test catches what a Dockerfile change could drop: from the built runtime image it makes
# a copy without libyaml-cpp (as if its package left the final stage's apt-get install) and without
# the digits data file, and expects tests/docker/image_test.py to fail naming both.
#   image_bad_input_test.sh <runtime image> <source dir>
set -euo pipefail
image="$1" src="$2"
broken="localhost/tj-image-test-broken:$$"
here="$(dirname "$0")"

buildah inspect --type image "$image" >/dev/null 2>&1 ||
  { echo "FAIL: image $image is not in buildah's storage: build it with scripts/build-images.sh" >&2; exit 1; }
ctr="$(buildah from --pull-never --name "tj-image-bad-input-$$" "$image")"
cleanup() { buildah rm "$ctr" >/dev/null 2>&1 || true; buildah rmi "$broken" >/dev/null 2>&1 || true; }
trap cleanup EXIT
data="$(grep -o -- '--data=/[^ ]*' "$src/examples/digits.yaml" | head -1)"
data="${data#--data=}"
buildah run --isolation chroot --user 0:0 "$ctr" -- sh -c \
  "rm -f /usr/lib/*/libyaml-cpp.so.0.7* '$data'"
buildah commit --quiet "$ctr" "$broken" >/dev/null

set +e
out="$(python3 "$here/image_test.py" --image "$broken" --source-dir "$src" --budget-mib 100000 \
  --data-from-manifest examples/digits.yaml 2>&1)"
code=$?
set -e
echo "$out"
[ "$code" -ne 0 ] || { echo "FAIL: image_test.py passed an image without libyaml-cpp and $data" >&2; exit 1; }
grep -q "needs libyaml-cpp.so.0.7" <<<"$out" || { echo "FAIL: the missing library is not named" >&2; exit 1; }
grep -q "reads $data, which is not" <<<"$out" || { echo "FAIL: the missing data file is not named" >&2; exit 1; }
echo "ok: the image test names the missing library and the missing data file"
