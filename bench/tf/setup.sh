#!/usr/bin/env bash
# The TensorFlow baselines' environment is the project's: scripts/install-tf.sh.
exec bash "$(dirname "$0")/../../scripts/install-tf.sh" "$@"
