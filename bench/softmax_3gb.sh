#!/usr/bin/env bash
# Out of CI (docs/benchmarks.md section 9): a 3.0 GB dense variable, softmax regression over 1,500
# features and 500,000 classes (float32[1500, 500000]), trained through `tjctl run` on 2 PS and 1
# worker to its first checkpoint (step 2) and one step beyond. Needs ~10 GiB of free memory (the
# worker ~6 GiB, each PS ~1.8 GiB) and ~6 GiB of disk. Prints the peak RSS (VmHWM, sampled every
# 0.5 s) of every process next to its share of the model, then the coordinator's step and
# checkpoint lines. Usage:
#   bench/softmax_3gb.sh [build_dir] [classes]      # classes 166667 makes it a 1 GB variable
set -euo pipefail
BUILD=${1:-build}
CLASSES=${2:-500000}
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
                     --batch-size=8, --steps=3, --test-percent=20, --eval-batch-size=8,
                     --learning-rate=0.01, --log-every-steps=1]
    PS:
      replicas: 2
      template: {spec: {containers: [{name: trainer, command: [tj-train]}]}}
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: trainer, command: [tj-train]}]}}
  runPolicy: {backoffLimit: 0, activeDeadlineSeconds: 1800}
  checkpoint: {dir: /unused, intervalSteps: 2, keep: 1}
EOF

declare -A peak
sample() {
  local f env role kib
  for f in $(pgrep -x tj-train); do
    env=$(tr '\0' '\n' < "/proc/$f/environ" 2>/dev/null) || continue
    grep -q "$WORK/run" <<<"$env" || continue
    role=$(grep '^TF_CONFIG' <<<"$env" | grep -o '"task":{[^}]*}' | tr -d '"{}' | sed 's/task://')
    kib=$(awk '/VmHWM/{print $2}' "/proc/$f/status" 2>/dev/null) || continue
    [ -n "$kib" ] || continue
    if [ -z "${peak[$role]:-}" ] || [ "$kib" -gt "${peak[$role]}" ]; then peak[$role]=$kib; fi
  done
}
"$TJCTL" run "$WORK/job.yaml" --work-dir "$WORK/run" --quiet > "$WORK/tjctl.log" 2>&1 &
TJCTL_PID=$!
while kill -0 "$TJCTL_PID" 2>/dev/null; do sample; sleep 0.5; done
wait "$TJCTL_PID" || { echo "tjctl run failed:"; tail -20 "$WORK/tjctl.log"; exit 1; }

MODEL_MIB=$(( FEATURES * CLASSES * 4 / 1048576 ))
echo "softmax float32[$FEATURES, $CLASSES] = $MODEL_MIB MiB; load $(cut -d' ' -f1-3 /proc/loadavg)"
for role in "${!peak[@]}"; do
  mib=$(( peak[$role] / 1024 ))
  case $role in
    *type:ps) share=$(( MODEL_MIB / 2 )) ;;
    *type:worker) share=$MODEL_MIB ;;
    *) share=0 ;;
  esac
  if [ "$share" -gt 0 ]; then
    printf '%-22s peak %6d MiB  share %6d MiB  x%s\n' "$role" "$mib" "$share" \
      "$(python3 -c "print(round($mib / $share, 3))")"
  else
    printf '%-22s peak %6d MiB\n' "$role" "$mib"
  fi
done | sort
grep -hE 'training from|step [0-9]+/|saved: step' "$WORK"/run/logs/*coordinator-0.log | cut -c1-160
