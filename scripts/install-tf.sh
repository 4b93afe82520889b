#!/usr/bin/env bash
# Installs TensorFlow (tensorflow-cpu from PyPI, the newest version pip finds for this Python) and
# this repository's Python package (python/: `pip install ./python`, its gRPC stubs generated from
# proto/tj/v1 at build time) in a cached virtual environment: the interpreter of the TensorFlow
# tests (tests/tf, run by scripts/test.sh) and of the TensorFlow baselines in bench/tf/.
# Idempotent: a venv in which tensorflow imports is kept; the package is reinstalled only when
# python/ or proto/tj/v1 changed since the last install. Prints the venv's python on stdout.
#
#   scripts/install-tf.sh
#
# Environment: TJ_TF_VENV (default ~/.cache/trainingjob-operator/tf-venv), PYTHON (default python3),
# TJ_TF_PACKAGE (default tensorflow-cpu; e.g. "tensorflow-cpu==2.17.1" to pin a version).
# Needs network access to PyPI and ~1 GiB of disk; a cold install took 48 s (docs/decisions.md).
set -euo pipefail

VENV="${TJ_TF_VENV:-$HOME/.cache/trainingjob-operator/tf-venv}"
PYTHON="${PYTHON:-python3}"
PACKAGE="${TJ_TF_PACKAGE:-tensorflow-cpu}"

fail() { echo "scripts/install-tf.sh: $*" >&2; exit 1; }
cd "$(dirname "$0")/.."
# Progress goes to stderr: stdout is the interpreter's path, for callers.
exec 3>&1 1>&2

tf_version() { "$VENV/bin/python" -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null; }

install_package() {
  # The package's sources and the protos its stubs come from: reinstalled when they change.
  local stamp="$VENV/.trainingjob-package-hash" hash
  hash="$(cat python/pyproject.toml python/setup.py proto/tj/v1/*.proto \
            $(find python/trainingjob -name '*.py' -not -path '*/v1/*' | sort) | sha256sum | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$hash" ]]; then
    echo "the trainingjob package is up to date in $VENV"
  else
    echo "pip install ./python ..."
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q ./python ||
      fail "pip install ./python failed (its build needs grpcio-tools from PyPI)"
    echo "$hash" > "$stamp"
  fi
  echo "$VENV/bin/python" >&3
}

if [[ -x "$VENV/bin/python" ]] && version="$(tf_version)"; then
  echo "TensorFlow $version already installed in $VENV"
  install_package
  exit 0
fi

command -v "$PYTHON" >/dev/null || fail "$PYTHON not found"

# python3 -m venv needs ensurepip, which Debian ships separately (python3-venv).
if ! "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  echo "installing python3-venv (Debian) ..."
  sudo=()
  if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null || fail "python3 -m venv is unavailable and apt-get needs root: run 'apt-get install -y python3-venv' as root"
    sudo=(sudo -n)
  fi
  command -v apt-get >/dev/null || fail "python3 -m venv is unavailable (no ensurepip) and apt-get is missing"
  minor="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq || fail "apt-get update failed"
  "${sudo[@]}" apt-get install -y -qq python3-venv "python$minor-venv" >/dev/null ||
    "${sudo[@]}" apt-get install -y -qq python3-venv >/dev/null ||
    fail "apt-get install python3-venv failed"
  "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1 || fail "python3 -m venv still unavailable after installing python3-venv"
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating venv $VENV ($("$PYTHON" --version 2>&1))"
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV" || { rm -rf "$VENV"; fail "python3 -m venv $VENV failed"; }
fi

echo "pip install $PACKAGE (a download of several hundred MiB) ..."
"$VENV/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip ||
  echo "scripts/install-tf.sh: warning: could not upgrade pip; trying with the venv's own" >&2
"$VENV/bin/python" -m pip install --disable-pip-version-check -q "$PACKAGE" ||
  fail "pip install $PACKAGE failed (no wheel for $("$VENV/bin/python" --version 2>&1) on $(uname -m), or PyPI unreachable); the TensorFlow tests cannot run"

version="$(tf_version)" || fail "$PACKAGE installed but 'import tensorflow' fails in $VENV"
echo "TensorFlow $version installed in $VENV"
install_package
