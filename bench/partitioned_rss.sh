#!/usr/bin/env bash
# Peak RSS of every process of a tj-train softmax job whose weight variable is large (default
# 1000 x 125,000 floats = 500 MB), 2 PS and 1 worker on this machine, each process under
# /usr/bin/time -v; next to the same job with a 10-class model (the baseline of the same run: what
# the processes cost without the model). Usage:
#   bench/partitioned_rss.sh [build_dir] [classes] [steps]
# Prints, per role, the peak RSS of both runs and (peak - baseline) / model bytes.
set -euo pipefail
BUILD=${1:-build}
CLASSES=${2:-125000}
STEPS=${3:-6}
FEATURES=1000
TRAIN=$(realpath "$BUILD/bin/tj-train")
WORK=$(mktemp -d /tmp/tj-partitioned-rss.XXXXXX)
# On any exit, SIGTERM the tj-train processes (children of /usr/bin/time), not only time itself.
trap 'for p in $(jobs -p); do pkill -TERM -P "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT

# 256 rows of 1000 features, 5 non-zero each (softmax skips zero features), labels in [0, classes).
make_data() {  # path classes
python3 - "$1" "$FEATURES" "$2" <<'PY'
import random, sys
path, features, classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
with open(path, "w") as f:
    for _ in range(256):
        row = [0.0] * features
        for j in rng.sample(range(features), 5):
            row[j] = round(rng.random(), 3)
        f.write(",".join(map(str, row)) + f",{rng.randrange(classes)}\n")
PY
}

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run_job() {  # $1: label, $2: classes
  local label=$1 classes=$2 dir="$WORK/$1"
  mkdir -p "$dir"
  make_data "$dir/data.csv" "$classes"
  local chief="127.0.0.1:$(port)" ps0="127.0.0.1:$(port)" ps1="127.0.0.1:$(port)" w0="127.0.0.1:$(port)"
  local cluster="{\"chief\":[\"$chief\"],\"ps\":[\"$ps0\",\"$ps1\"],\"worker\":[\"$w0\"]}"
  start() {  # name type index args...
    local name=$1 type=$2 index=$3; shift 3
    TF_CONFIG="{\"cluster\":$cluster,\"task\":{\"type\":\"$type\",\"index\":$index}}" \
      TJ_CHECKPOINT_DIR="$dir/ckpt" \
      /usr/bin/time -v -o "$dir/$name.time" "$TRAIN" "$@" > "$dir/$name.log" 2>&1 &
  }
  start ps-0 ps 0
  start ps-1 ps 1
  start worker-0 worker 0
  local t0=$(date +%s.%N)
  TF_CONFIG="{\"cluster\":$cluster,\"task\":{\"type\":\"chief\",\"index\":0}}" \
    TJ_CHECKPOINT_DIR="$dir/ckpt" /usr/bin/time -v -o "$dir/chief.time" "$TRAIN" \
    --model=softmax --data="$dir/data.csv" --num-classes="$classes" --steps="$STEPS" \
    --batch-size=32 --test-percent=10 --log-every-steps=1 > "$dir/chief.log" 2>&1 \
    || { echo "$label: coordinator failed"; tail -20 "$dir/chief.log"; exit 1; }
  local t1=$(date +%s.%N)
  # SIGTERM to tj-train itself (the child of /usr/bin/time), so that time reports its peak.
  for p in $(jobs -p); do pkill -TERM -P "$p" 2>/dev/null || true; done
  wait || true
  echo "$label: $STEPS steps in $(python3 -c "print(round($t1-$t0,1))") s"
}

run_job baseline 10
run_job model "$CLASSES"
MODEL_BYTES=$((FEATURES * CLASSES * 4))
printf '%-9s %14s %14s %22s\n' role "baseline MiB" "model MiB" "(model-base)/S"
for role in chief ps-0 ps-1 worker-0; do
  b=$(awk -F': ' '/Maximum resident/ {print $2}' "$WORK/baseline/$role.time")
  m=$(awk -F': ' '/Maximum resident/ {print $2}' "$WORK/model/$role.time")
  python3 -c "print(f'{\"$role\":<9} {$b/1024:14.1f} {$m/1024:14.1f} {($m-$b)*1024/$MODEL_BYTES:22.2f}')"
done
echo "S = $FEATURES x $CLASSES float32 = $((MODEL_BYTES >> 20)) MiB (softmax/w; softmax/b is $((CLASSES*4>>10)) KiB)"
grep -h "dense variables over" "$WORK/model/chief.log" | sed 's/^.*\] //'
