"""The same CTR model both ways, back to back under `tjctl run`: tj-train --model=fm and the
TensorFlow ParameterServerStrategy program examples/tf-ctr/ctr_pss.py (Keras FM, Adagrad), on the
same synthetic click log (tj-train's --data=synthetic-ctr, which the TF program computes with TF
ops), with 2 PS and 2 workers each. Reports training examples/s, time to a held-out AUC, final AUC;
with --preempt-at, also what a `tjctl preempt ps-0` at that step costs each.

The same model: the Keras model's output layer is Dense(1) over the FM's sum, a learned scale as
well as a bias, so tj-train runs --head=dense; Keras' Embedding starts uniform on +-0.05, so
tj-train runs --init=uniform; both Adagrad (accumulator 0.1) at the same learning rate and batch.
The same held-out set: the TF program trains on examples [0, examples) and evaluates on the next
examples / 4; tj-train gets examples * 5 / 4 with --test-percent=20 --split=tail. Round r uses
seed --seed + r on both sides (the data, and tj-train's initial values; TF's are unseeded).

    python bench/tf/ctr_compare.py --steps 2000 [--preempt-at 200] [--rounds 2]

Run it with the TF venv's python (scripts/install-tf.sh) and a built tjctl and tj-train
(build/bin). Nothing is asserted: docs/benchmarks.md section 11 has results.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]


def manifest(kind, args, python, seed):
    common = [f"--steps={args.steps}", f"--seed={seed}"]
    held_out = args.examples // 4
    if kind == "tj":
        command = ["tj-train"]
        train_args = common + [
            "--model=fm", "--data=synthetic-ctr", f"--synthetic-examples={args.examples + held_out}",
            "--test-percent=20", "--split=tail", f"--synthetic-vocab={args.vocab}",
            f"--id-space={args.id_space}", f"--factor-dim={args.dim}", "--head=dense",
            "--init=uniform", "--init-limit=0.05", f"--batch-size={args.batch}",
            "--optimizer=adagrad", f"--learning-rate={args.learning_rate}",
            f"--eval-every-steps={args.eval_every}",
            f"--log-every-steps={args.eval_every}"]
        coordination = ""
    else:  # tf, tf-plain
        command = [python, str(REPO / "examples" / "tf-ctr" / "ctr_pss.py")]
        train_args = (["--plain"] if kind == "tf-plain" else []) + common + [
            f"--examples={args.examples}", f"--eval-examples={held_out}", f"--vocab={args.vocab}",
            f"--id-space={args.id_space}", f"--dim={args.dim}", f"--batch={args.batch}",
            f"--learning-rate={args.learning_rate}", f"--eval-every={args.eval_every}",
            "--report-every=20"]
        coordination = ("" if kind == "tf-plain" else
                        "\n              ports: [{name: tj-coordination, containerPort: 2223}]")
    c = json.dumps(command)
    return f"""apiVersion: trainingjob.dev/v1alpha1
kind: TrainingJob
metadata: {{name: ctr-{kind}}}
spec:
  replicaSpecs:
    Coordinator:
      template:
        spec:
          containers:
            - name: trainer
              command: {c}
              args: {json.dumps(train_args)}{coordination}
    PS:
      replicas: {args.ps}
      template: {{spec: {{containers: [{{name: trainer, command: {c}}}]}}}}
    Worker:
      replicas: 2
      template: {{spec: {{containers: [{{name: trainer, command: {c}}}]}}}}
  runPolicy: {{backoffLimit: 6}}
  checkpoint: {{dir: /unused-locally}}
"""


def read(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_one(kind, args, python, tjctl, work_root, seed):
    work = work_root / f"{kind}-{time.strftime('%H%M%S')}"
    work.mkdir(parents=True)
    path = work.with_suffix(".yaml")
    path.write_text(manifest(kind, args, python, seed))
    load_at_start = os.getloadavg()
    started = time.monotonic()
    process = subprocess.Popen([tjctl, "run", "-q", "--work-dir", str(work), str(path)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples = []  # (seconds since start, step, auc or None)
    auc_trail = []
    preempted_at = None
    log = work / "logs" / f"ctr-{kind}-coordinator-0.log"
    while process.poll() is None:
        progress = read(work / "progress.json")
        now = time.monotonic() - started
        if kind == "tf-plain" and log.exists():  # no progress without the package: its log
            steps = [int(line.split()[1]) for line in log.read_text().splitlines()
                     if line.startswith("step ")]
            progress = {"step": steps[-1]} if steps else None
        if progress:
            samples.append((now, progress.get("step", 0), progress.get("metrics", {}).get("auc")))
            if samples[-1][2] is not None and (not auc_trail or auc_trail[-1][1] != samples[-1][2]):
                auc_trail.append((samples[-1][1], samples[-1][2]))  # (step seen, new AUC)
            if (args.preempt_at and preempted_at is None
                    and progress.get("step", 0) >= args.preempt_at):
                preempted_at = (now, progress["step"])
                subprocess.Popen([tjctl, "preempt", f"ctr-{kind}", "ps-0", "--work-dir",
                                  str(work)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        time.sleep(0.1)
    status = read(work / "status.json") or {}
    progress = status.get("progress") or {}
    result = {"kind": kind, "phase": status.get("phase"), "wall_s": time.monotonic() - started,
              "final_auc": progress.get("metrics", {}).get("auc"), "steps": progress.get("step"),
              "seed": seed, "work_dir": str(work),
              "load_average_start_end": [load_at_start[0], os.getloadavg()[0]],
              "auc_trail": auc_trail}
    training = [s for s in samples if s[1] > 0]
    if len(training) >= 2:
        (t0, s0, _), (t1, s1, _) = training[0], training[-1]
        result["examples_per_s"] = (s1 - s0) * args.batch / (t1 - t0) if t1 > t0 else None
        result["first_step_s"] = t0
    reached = [t for t, _, auc in samples if auc is not None and auc >= args.target_auc]
    result["time_to_auc_s"] = (reached[0] - training[0][0]) if reached and training else None
    if preempted_at is not None:
        t_notice, step = preempted_at
        after = [t for t, s, _ in samples if t > t_notice and s > step + 1]
        result["preempted_at_step"] = step
        result["back_past_step_s"] = (after[0] - t_notice) if after else None
        result["coordinator_starts"] = (status.get("replicas", {})
                                        .get(f"ctr-{kind}-coordinator-0", {}).get("starts"))
    return result


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--ps", type=int, default=2, help="PS tasks (workers: 2)")
    parser.add_argument("--seed", type=int, default=1, help="round r runs seed + r")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--examples", type=int, default=100000)
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--id-space", type=int, default=1 << 22)
    parser.add_argument("--dim", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--target-auc", type=float, default=0.8)
    parser.add_argument("--preempt-at", type=int, default=0, help="tjctl preempt ps-0 at this step")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of --kinds, back to back")
    parser.add_argument("--kinds", default="tj,tf",
                        help="tj (tj-train), tf (the TF program with the package), tf-plain "
                             "(without it)")
    parser.add_argument("--tjctl", default=str(REPO / "build" / "bin" / "tjctl"))
    args = parser.parse_args(argv)
    if args.examples % 4:
        parser.error("--examples must be a multiple of 4 (a quarter of it is held out)")
    work_root = pathlib.Path(tempfile.mkdtemp(prefix="ctr-compare-"))
    for round_index in range(args.rounds):
        for kind in args.kinds.split(","):
            result = run_one(kind, args, sys.executable, args.tjctl, work_root,
                             args.seed + round_index)
            result["round"] = round_index
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
