#!/usr/bin/env bash
# Out of CI (docs/benchmarks.md section 9): a 3.0 GB dense variable, softmax regression over 1,500
# features and 500,000 classes (float32[1500, 500000]), trained through `tjctl run` on 2 PS and 1
# worker to its first checkpoint (step 2) and one step beyond. Needs ~10 GiB of free memory (the
# worker ~6 GiB, each PS ~1.8 GiB) and ~6 GiB of disk. Prints the peak RSS (VmHWM, sampled every
# 0.5 s) and CPU seconds of every process next to its share of the model, then the coordinator's
# step and checkpoint lines and the time per step. Usage:
#   bench/softmax_3gb.sh [build_dir] [classes] [ps] [steps] [checkpoint_interval]
# (classes 166667 makes it a 1 GB variable; defaults 500000 2 3 2). tjctl is build_dir's; the
# tj-train it starts is $TJ_BIN_DIR's when set (tjctl looks there first), so one tjctl can run
# another build's tj-train; $TJ_TRAIN_ARGS are added to the coordinator's flags.
set -euo pipefail
BUILD=${1:-build}
CLASSES=${2:-500000}
PS=${3:-2}
STEPS=${4:-3}
INTERVAL=${5:-2}
FEATURES=1500
TJCTL=$(realpath "$BUILD/bin/tjctl")
WORK=$(mktemp -d /var/tmp/tj-softmax-3gb.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# 40 rows of 1,500 features, 5 non-zero each: the compute stays small, a step is the pull and the
# push of the whole variable.
python3 - "$WORK/data.csv" "$FEATURES" "$CLASSES" <<'PY'
import random, sys
path, features, classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
with open(path, "w") as f:
    for _ in range(40):
        row = ["0"] * features
        for j in rng.sample(range(features), 5):
            row[j] = str(round(rng.random(), 3))
        f.write(",".join(row) + f",{rng.randrange(classes)}\n")
PY

cat > "$WORK/job.yaml" <<EOF
apiVersion: trainingjob.dev/v1alpha1
kind: TrainingJob
metadata:
  name: softmax-3gb
spec:
  replicaSpecs:
    Coordinator:
      replicas: 1
      template:
        spec:
          containers:
            - name: trainer
              command: [tj-train]
              args: [--model=softmax, --data=$WORK/data.csv, --num-classes=$CLASSES,
                     --batch-size=8, --steps=$STEPS, --test-percent=20, --eval-batch-size=8,
                     --learning-rate=0.01, --log-every-steps=1${TJ_TRAIN_ARGS:+, $TJ_TRAIN_ARGS}]
    PS:
      replicas: $PS
      template: {spec: {containers: [{name: trainer, command: [tj-train]}]}}
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: trainer, command: [tj-train]}]}}
  runPolicy: {backoffLimit: 0, activeDeadlineSeconds: 1800}
  checkpoint: {dir: /unused, intervalSteps: $INTERVAL, keep: 1}
EOF

declare -A peak cpu
sample() {
  local f env role kib ticks
  for f in $(pgrep -x tj-train); do
    env=$(tr '\0' '\n' 2>/dev/null < "/proc/$f/environ") || continue  # gone: the error redirected first
    grep -q "$WORK/run" <<<"$env" || continue
    role=$(grep '^TF_CONFIG' <<<"$env" | grep -o '"task":{[^}]*}' | tr -d '"{}' | sed 's/task://')
    kib=$(awk '/VmHWM/{print $2}' "/proc/$f/status" 2>/dev/null) || continue
    [ -n "$kib" ] || continue
    if [ -z "${peak[$role]:-}" ] || [ "$kib" -gt "${peak[$role]}" ]; then peak[$role]=$kib; fi
    # CPU seconds so far (utime + stime, in clock ticks); the last sample is kept.
    ticks=$(awk '{print $14 + $15}' "/proc/$f/stat" 2>/dev/null) || continue
    [ -n "$ticks" ] && cpu[$role]=$ticks
  done
}
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
"$TJCTL" run "$WORK/job.yaml" --work-dir "$WORK/run" --quiet > "$WORK/tjctl.log" 2>&1 &
TJCTL_PID=$!
while kill -0 "$TJCTL_PID" 2>/dev/null; do sample; sleep 0.5; done
wait "$TJCTL_PID" || { echo "tjctl run failed:"; tail -20 "$WORK/tjctl.log"; exit 1; }

MODEL_MIB=$(( FEATURES * CLASSES * 4 / 1048576 ))
echo "softmax float32[$FEATURES, $CLASSES] = $MODEL_MIB MiB, $PS PS; load at the start $LOAD0"
for role in "${!peak[@]}"; do
  mib=$(( peak[$role] / 1024 ))
  case $role in
    *type:ps) share=$(( MODEL_MIB / PS )) ;;
    *type:worker) share=$MODEL_MIB ;;
    *) share=0 ;;
  esac
  cpu_s=$(python3 -c "print(round(${cpu[$role]:-0} / $(getconf CLK_TCK), 2))")
  if [ "$share" -gt 0 ]; then
    printf '%-22s peak %6d MiB  share %6d MiB  x%s  cpu %s s\n' "$role" "$mib" "$share" \
      "$(python3 -c "print(round($mib / $share, 3))")" "$cpu_s"
  else
    printf '%-22s peak %6d MiB  cpu %s s\n' "$role" "$mib" "$cpu_s"
  fi
done | sort
grep -hE 'training from|step [0-9]+/|saved: step' "$WORK"/run/logs/*coordinator-0.log | cut -c1-160
# The time per step: from "training from" to the last step line, less the checkpoints saved in
# between, over the steps (one worker runs two steps at once, so the gaps between step lines
# alternate and say little one by one); and the same from step 2 on (each model's first step
# faults in its values and gradient).
grep -hE 'training from|step [0-9]+/|saved: step' "$WORK"/run/logs/*coordinator-0.log | python3 -c '
import re, sys
from datetime import datetime
start, steps, saves = None, [], []
for line in sys.stdin:
    t = datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S.%f")
    if "training from" in line: start = t
    elif "saved: step" in line:
        m = re.search(r"bytes in ([0-9.]+)(ms|s)", line)
        saves.append((t, float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)))
    else: steps.append(t)
def per_step(t0, t1, n):
    busy = (t1 - t0).total_seconds() - sum(d for t, d in saves if t0 < t <= t1)
    return busy / n
if start and len(steps) > 2:
    print(f"per step: {per_step(start, steps[-1], len(steps)):.3f} s over {len(steps)} steps; "
          f"{per_step(steps[1], steps[-1], len(steps) - 2):.3f} s over steps 3..{len(steps)} (checkpoints excluded)")
'
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
