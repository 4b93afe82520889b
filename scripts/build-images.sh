#!/usr/bin/env bash
# Builds the project's images with buildah, on a machine with no Docker engine and no registry,
# from Debian's own packages only (docker/README.md, docs/decisions.md "Session 11: images"):
#
#   scripts/build-images.sh                # runtime stages over the binaries ctest tested (CI)
#   scripts/build-images.sh --from-source  # docker/Dockerfile.* as they are, build stage included
#   scripts/build-images.sh --only tf-pss  # one image: operator, runtime or tf-pss
#   scripts/build-images.sh --from-source --tag-suffix -source   # beside the tested images
#   scripts/build-images.sh --from-source --ccache ~/.cache/ccache  # the build stage uses a ccache
#
# 1. The bases debian:bookworm and debian:bookworm-slim, when buildah's storage lacks them: Debian's
#    debuerreotype (the tool the official images are made with) runs debootstrap --variant=minbase
#    against deb.debian.org, minimises the configuration as the official image does, and
#    debuerreotype-slimify trims the slim one. The root file system tarballs are cached in
#    ~/.cache/trainingjob-operator/images, so a machine whose buildah storage was wiped re-imports
#    them (~45 s each under load) instead of running debootstrap again.
# 2. The images, tagged with the names the chart (values.yaml repository, Chart.yaml appVersion)
#    and the examples (examples/digits.yaml image:) use, with `buildah bud --isolation chroot
#    --layers`. By default docker/dockerfile_stages.py replaces each Dockerfile's build stage by
#    the files of BUILD_DIR (default build/) and keeps the final stage verbatim; the input digest
#    is a label, so a run with nothing changed builds nothing. --from-source builds the Dockerfiles
#    unchanged (install-deps.sh and the project's cold build inside debian:bookworm; not measured).
# 3. ghcr.io/trainingjob-dev/tf-pss (docker/Dockerfile.tf-pss: TensorFlow from PyPI, the python/ package, the
#    examples/tf-ctr program) as the Dockerfile is, both ways. TJ_SKIP_TF_IMAGE=1 leaves it out.
#
# Needs root (buildah's storage in /var/lib/containers). Installs buildah, debootstrap and
# debuerreotype from Debian when missing. Prints one line per image; exit 1 names what failed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

from_source=0
only=""
tag_suffix=""
ccache_dir=""
build_dir="${BUILD_DIR:-build}"
while [ $# -gt 0 ]; do
  case "$1" in
    --from-source) from_source=1 ;;
    --only) only="$2"; shift ;;
    --only=*) only="${1#*=}" ;;
    --ccache) ccache_dir="$2"; shift ;;
    --ccache=*) ccache_dir="${1#*=}" ;;
    --tag-suffix) tag_suffix="$2"; shift ;;
    --tag-suffix=*) tag_suffix="${1#*=}" ;;
    --build-dir) build_dir="$2"; shift ;;
    --build-dir=*) build_dir="${1#*=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-images: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$only" in
  ""|operator|runtime|tf-pss) ;;
  *) echo "build-images: --only $only: want operator, runtime or tf-pss" >&2; exit 2 ;;
esac
build_dir="$(cd "$build_dir" 2>/dev/null && pwd)" || {
  [ "$from_source" = 1 ] || [ "$only" = tf-pss ] || { echo "build-images: no build directory ${BUILD_DIR:-build} (run scripts/build.sh first)" >&2; exit 1; }
}

if [ "$(id -u)" -ne 0 ]; then
  echo "build-images: needs root (buildah's storage in /var/lib/containers, chroot isolation)" >&2
  exit 1
fi

tools=(buildah debootstrap debuerreotype)
missing=()
for p in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "build-images: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/trainingjob-operator/images"
mirror="${TJ_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
mkdir -p "$cache"
# One run at a time: runs share the build contexts under $cache (ctest runs the cluster doc's
# build-images step beside other tests that build or read the images).
exec 9>"$cache/.lock"
flock 9

have_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }

# make_rootfs_tarballs: debian-bookworm.tar and debian-bookworm-slim.tar in $cache, the way the
# official images are made (debuerreotype's examples/debian.sh), from the mirror instead of
# snapshot.debian.org.
make_rootfs_tarballs() {
  local work="$cache/work" t0
  t0=$(date +%s)
  # A finished debootstrap is kept until the tarballs exist (an interrupted run resumes there).
  if [ ! -e "$work/debootstrapped" ]; then
    rm -rf "$work"
    mkdir -p "$work"
    echo "build-images: debootstrap --variant=minbase bookworm from $mirror" >&2
    debuerreotype-init --non-debian "$work/rootfs" bookworm "$mirror" >"$work/init.log" 2>&1 ||
      { tail -30 "$work/init.log" >&2; echo "build-images: debootstrap failed (log above)" >&2; return 1; }
    touch "$work/debootstrapped"
  fi
  rm -rf "$work/slim"
  debuerreotype-minimizing-config "$work/rootfs"
  # The official image's sources (debuerreotype-debian-sources-list insists on snapshot.debian.org).
  rm -f "$work/rootfs/etc/apt/sources.list"
  cat >"$work/rootfs/etc/apt/sources.list.d/debian.sources" <<EOS
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
  debuerreotype-apt-get "$work/rootfs" update -qq
  debuerreotype-apt-get "$work/rootfs" dist-upgrade -yqq >/dev/null
  debuerreotype-recalculate-epoch "$work/rootfs"
  debuerreotype-fixup "$work/rootfs"
  debuerreotype-tar "$work/rootfs" "$work/debian-bookworm.tar"
  cp -a "$work/rootfs" "$work/slim"
  debuerreotype-slimify "$work/slim"
  debuerreotype-fixup "$work/slim"
  debuerreotype-tar "$work/slim" "$work/debian-bookworm-slim.tar"
  mv "$work/debian-bookworm.tar" "$work/debian-bookworm-slim.tar" "$cache/"
  rm -rf "$work"
  echo "build-images: root file systems made in $(( $(date +%s) - t0 )) s" >&2
}

# import_base <tag>: the cached tarball as docker.io/library/debian:<tag>, configured as the
# official image is (PATH, CMD bash).
import_base() {
  local tag="$1" ctr t0
  t0=$(date +%s)
  ctr="$(buildah from scratch)"
  buildah add --quiet "$ctr" "$cache/debian-$tag.tar" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd bash --os linux --arch "$(dpkg --print-architecture)" \
    --label "dev.trainingjob.base=debuerreotype bookworm from $mirror" "$ctr"
  buildah commit --quiet --rm "$ctr" "docker.io/library/debian:$tag" >/dev/null
  echo "build-images: base docker.io/library/debian:$tag imported in $(( $(date +%s) - t0 )) s" >&2
}

for tag in bookworm bookworm-slim; do
  have_image "docker.io/library/debian:$tag" && continue
  [ -s "$cache/debian-$tag.tar" ] || make_rootfs_tarballs
  import_base "$tag"
done

# A build from source shares nothing under $cache but the bases (its context is the checkout
# itself) and compiles for an hour or more: it does not hold the other runs up.
if [ "$from_source" = 1 ] && [ "$only" != tf-pss ]; then flock -u 9; fi

# The names the chart and the examples pull (Kubernetes reads an unqualified name as docker.io).
app_version="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' helm/trainingjob-operator/Chart.yaml)"
operator_repo="$(sed -n '/^image:/,/^[a-z]/s/^  repository: *//p' helm/trainingjob-operator/values.yaml)"
runtime_ref="$(sed -n 's/^ *image: *//p' examples/digits.yaml | head -1)"
[ -n "$app_version" ] && [ -n "$operator_repo" ] && [ -n "$runtime_ref" ] ||
  { echo "build-images: cannot read the image names from helm/ and examples/digits.yaml" >&2; exit 1; }
qualify() { case "${1%%/*}" in *.*|*:*|localhost) echo "$1" ;; *) echo "docker.io/$1" ;; esac; }

# stamp <tag> <label>...: labels added after the build. As `bud --label` they would enter every
# layer's cache key, and the two images could not share their identical apt-get layer.
stamp() {
  local tag="$1" ctr args=()
  shift
  for label in "$@"; do args+=(--label "$label"); done
  ctr="$(buildah from --pull-never "$tag")"
  buildah config "${args[@]}" "$ctr"
  buildah commit --quiet --rm "$ctr" "$tag" >/dev/null
}

# up_to_date <tag> <work dir>: sets `digest` over everything the build reads (the Containerfile, the
# context, the base image) and says whether the image already carries it.
up_to_date() {
  local current
  digest="$( (cd "$2" && find . -type f -print0 | sort -z | xargs -0 sha256sum;
              buildah images --no-trunc --noheading --format '{{.ID}}' docker.io/library/debian:bookworm-slim) |
            sha256sum | cut -c1-32)"
  current="$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "dev.trainingjob.inputs"}}' "$1" 2>/dev/null || true)"
  [ "$current" = "$digest" ] || return 1
  echo "build-images: $1 up to date"
}

# build_image <Dockerfile> <tag>
build_image() {
  local dockerfile="docker/$1" tag t0 digest current work
  tag="$(qualify "$2")$tag_suffix"
  t0=$(date +%s)
  local bud=(buildah bud --isolation chroot --layers --pull-never --quiet -t "$tag")
  if [ "$from_source" = 1 ]; then
    # The build stage's scripts/build.sh compiles through ccache (CMakeLists.txt finds it): a
    # mounted cache directory is shared with the machine's own builds. Not part of the layer key.
    # hash_dir off: the build stage compiles in /src, the machine in its checkout, and hashing the
    # directory would make every lookup miss.
    local ccache_args=()
    if [ -n "$ccache_dir" ]; then
      printf 'hash_dir = false\nmax_size = %s\n' "$(ccache -k max_size 2>/dev/null || echo 5G)" >"$cache/ccache.conf"
      ccache_args=(--volume "$(readlink -f "$ccache_dir"):/root/.cache/ccache"
                   --volume "$cache/ccache.conf:/root/.config/ccache/ccache.conf:ro")
    fi
    "${bud[@]}" "${pip_ca_args[@]}" "${ccache_args[@]}" -f "$dockerfile" . >/dev/null
    stamp "$tag" dev.trainingjob.build=source
  else
    work="$cache/context-$1"
    python3 docker/dockerfile_stages.py prebuilt --dockerfile "$dockerfile" --source-dir "$repo" \
      --build-dir "$build_dir" --out "$work"
    up_to_date "$tag" "$work" && return
    "${bud[@]}" -f "$work/Containerfile" "$work/context" >/dev/null
    stamp "$tag" dev.trainingjob.build=prebuilt "dev.trainingjob.inputs=$digest"
  fi
  built=1
  echo "build-images: $tag built from $dockerfile in $(( $(date +%s) - t0 )) s"
}

# build_tf_image <tag>: docker/Dockerfile.tf-pss as it is (it has no build stage), from a context
# of only the three paths it copies, with a digest label like build_image's. Its TensorFlow layer
# (a pinned pip install, ~600 MB from PyPI) is cached by buildah's --layers and is rebuilt only
# when the lines before it change.
build_tf_image() {
  local tag work digest current t0
  tag="$(qualify "$1")$tag_suffix"
  t0=$(date +%s)
  work="$cache/context-Dockerfile.tf-pss"
  rm -rf "$work"
  mkdir -p "$work/context/proto/tj" "$work/context/examples/tf-ctr"
  # -L: the files, never links (a checkout made of links would give the build links it cannot
  # follow out of its context; tj_e2e_cluster_doc_test builds from one).
  cp -RL proto/tj/v1 "$work/context/proto/tj/v1"
  cp -RL python "$work/context/python"
  find "$work/context/python" \( -name __pycache__ -o -name build -o -name '*.egg-info' -o -name v1 -path '*/trainingjob/v1' \) \
    -prune -exec rm -rf {} +
  cp examples/tf-ctr/ctr_pss.py "$work/context/examples/tf-ctr/"
  cp docker/Dockerfile.tf-pss "$work/Containerfile"
  up_to_date "$tag" "$work" && return
  buildah bud --isolation chroot --layers --pull-never --quiet "${pip_ca_args[@]}" -t "$tag" -f "$work/Containerfile" "$work/context" >/dev/null
  stamp "$tag" dev.trainingjob.build=dockerfile "dev.trainingjob.inputs=$digest"
  built=1
  echo "build-images: $tag built from docker/Dockerfile.tf-pss in $(( $(date +%s) - t0 )) s ($(buildah images --noheading --format '{{.Size}}' "$tag"))"
}

# pip trusts what this machine trusts (a TLS-inspecting proxy's CA too): the host's bundle is
# mounted for the RUN steps only and named by the Dockerfiles' PIP_CERT argument, never copied.
pip_ca=(/etc/ssl/certs/ca-certificates.crt) pip_ca_args=()
if [ -s "${PIP_CERT:-$pip_ca}" ]; then
  pip_ca_args=(--volume "$(readlink -f "${PIP_CERT:-$pip_ca}"):/run/tj-build-ca.crt:ro" --build-arg PIP_CERT=/run/tj-build-ca.crt)
fi

wanted() { [ -z "$only" ] || [ "$only" = "$1" ]; }
built=0
if wanted operator; then build_image Dockerfile.operator "$operator_repo:$app_version"; fi
if wanted runtime; then build_image Dockerfile.runtime "$runtime_ref"; fi
if wanted tf-pss && [ "${TJ_SKIP_TF_IMAGE:-0}" != 1 ]; then
  tf_ref="$(sed -n 's/^ *image: *//p' examples/tf-ctr/tf-ctr.yaml | head -1)"
  [ -n "$tf_ref" ] || { echo "build-images: cannot read the TensorFlow image's name from examples/tf-ctr/tf-ctr.yaml" >&2; exit 1; }
  flock 9  # its context is under $cache (held already unless --from-source let it go)
  build_tf_image "$tf_ref"
fi
# Each rebuild leaves the previous image's layers (hundreds of MB of binaries) untagged: remove
# the images nothing tags or builds on. The shared apt-get layer is a parent of both and stays.
if [ "$built" = 1 ]; then
  buildah rmi --prune >/dev/null 2>&1 || true
fi
