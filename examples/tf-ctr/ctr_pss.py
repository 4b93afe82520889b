"""A CTR model (factorization machine over hashed categorical fields: embeddings on the parameter
server, tj-train's --model=fm on its --data=synthetic-ctr) trained with TensorFlow's ParameterServerStrategy and ClusterCoordinator, adopted to
trainingjob-operator with the lines marked "trainingjob": preemption notices checkpoint and
restart it, a lost PS restarts it from the last checkpoint, progress reaches `kubectl get tj`.

One program for every replica: TF_CONFIG says which. PS and workers serve TensorFlow's server;
the chief (the TrainingJob's Coordinator) drives training.

    python ctr_pss.py --steps 2000 --batch 256   # as a replica: TF_CONFIG and TJ_* set
"""
import argparse
import logging
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")  # TensorFlow's advice for PS training

import tensorflow as tf  # noqa: E402

NUM_FIELDS = 8


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps (closures)")
    parser.add_argument("--batch", type=int, default=256, help="examples per step")
    parser.add_argument("--examples", type=int, default=500000,
                        help="training examples (tj-train's --synthetic-examples); batches sample "
                             "them uniformly")
    parser.add_argument("--vocab", type=int, default=1000, help="categories per field")
    parser.add_argument("--id-space", type=int, default=1 << 22, help="hashed id space")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dim", type=int, default=8, help="embedding size")
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--report-every", type=int, default=20, help="steps between loss fetches")
    parser.add_argument("--eval-examples", type=int, default=20000,
                        help="held-out examples (after the training ones) for the AUC")
    parser.add_argument("--step-sleep-ms", type=int, default=0,
                        help="pause the chief this long after scheduling each step (tests that "
                             "need training to outlast a grace period)")
    parser.add_argument("--plain", action="store_true",
                        help="without the trainingjob package (the unmodified program, for "
                             "bench/tf/ctr_compare.py's comparison)")
    parser.add_argument("--eval-every", type=int, default=0,
                        help="steps between evaluations (0: only at the end)")
    return parser.parse_args(argv)


# tj-train's --data=synthetic-ctr (trainer/data/synthetic_ctr.h), computed with TensorFlow ops so
# the workers generate it themselves: example i of (seed, i) alone; field f's category is
# floor(vocab * u^2); its id hash(seed, field, category) mod id_space; the label a Bernoulli draw of
# a hidden logistic model. Both programs of bench/tf/ctr_compare.sh see the same examples.
_U64 = tf.uint64
_SALT_CATEGORY, _SALT_ID, _SALT_WEIGHT, _SALT_LABEL = 1, 2, 3, 4


def _mix(x):
    """SplitMix64's finalizer (wrapping uint64 arithmetic)."""
    x = x + tf.constant(0x9E3779B97F4A7C15, _U64)
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(30, _U64)))
    x = x * tf.constant(0xBF58476D1CE4E5B9, _U64)
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(27, _U64)))
    x = x * tf.constant(0x94D049BB133111EB, _U64)
    return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(31, _U64)))


def _hash(seed, salt, a, b):
    seeded = tf.bitwise.bitwise_xor(tf.constant(seed, _U64), _mix(tf.constant(salt, _U64)))
    return _mix(tf.bitwise.bitwise_xor(_mix(tf.bitwise.bitwise_xor(_mix(seeded), a)), b))


def _uniform(h):
    return tf.cast(tf.bitwise.right_shift(h, tf.constant(11, _U64)), tf.float64) * 2.0 ** -53


def synthetic_examples(first, count, args):
    """Examples first .. first+count-1: ids [count, NUM_FIELDS] (int64) and labels [count]."""
    i = tf.cast(tf.range(count, dtype=tf.int64) + first, _U64)[:, None]
    fields = tf.cast(tf.range(NUM_FIELDS, dtype=tf.int64), _U64)[None, :]
    u = _uniform(_hash(args.seed, _SALT_CATEGORY, i, fields))
    category = tf.cast(tf.floor(float(args.vocab) * u * u), _U64)
    ids = tf.cast(tf.math.floormod(_hash(args.seed, _SALT_ID, fields, category),
                                   tf.constant(args.id_space, _U64)), tf.int64)
    weight = 3.0 ** 0.5 * (2.0 * _uniform(_hash(args.seed, _SALT_WEIGHT, fields, category)) - 1.0)
    logit = -1.0 + tf.reduce_sum(weight, axis=1)
    label_u = _uniform(_hash(args.seed, _SALT_LABEL, i[:, 0], tf.constant(0, _U64)))
    return ids, tf.cast(label_u < tf.sigmoid(logit), tf.float32)


def build_model(vocab, dim):
    ids = tf.keras.Input(shape=(NUM_FIELDS,), dtype="int64", name="ids")
    linear = tf.keras.layers.Embedding(vocab, 1, name="linear")(ids)  # [B, F, 1]
    factors = tf.keras.layers.Embedding(vocab, dim, name="factors")(ids)  # [B, F, D]
    summed = tf.keras.ops.sum(factors, axis=1)
    pairwise = 0.5 * tf.keras.ops.sum(
        tf.keras.ops.square(summed) - tf.keras.ops.sum(tf.keras.ops.square(factors), axis=1),
        axis=1, keepdims=True)
    # Dense(1) learns a scale as well as the bias: z = b + a * (linear + pairwise), a starting
    # Glorot-uniform on +-sqrt(3). tj-train runs this model with --head=dense --init=uniform.
    logit = tf.keras.layers.Dense(1, name="bias")(
        tf.keras.ops.sum(linear, axis=1) + pairwise)
    return tf.keras.Model(ids, tf.keras.ops.squeeze(logit, axis=1))


def serve(resolver, plain):
    """PS and workers: TensorFlow's server, until the process is stopped."""
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                                  task_index=resolver.task_id,
                                  protocol=resolver.rpc_layer or "grpc", start=True)
    if plain:
        server.join()
        return
    import trainingjob.tf  # trainingjob

    # An evicted PS serves on until the chief has saved its variables.  # trainingjob
    trainingjob.tf.serve(server, linger=resolver.task_type == "ps")  # trainingjob


def train_plain(args, coordinator, model, train_step, iterator, evaluate):
    """The loop as TensorFlow's tutorial writes it: no checkpoints, nothing restarts it."""
    for step in range(1, args.steps + 1):
        loss = coordinator.schedule(train_step, args=(iterator,))
        if step % args.report_every == 0:
            print(f"step {step} loss {float(loss.fetch()):.4f}", flush=True)
    coordinator.join()
    print(f"trained {args.steps} steps; eval AUC {evaluate():.4f}", flush=True)


def train(args, resolver):
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model = build_model(args.id_space, args.dim)
        optimizer = tf.keras.optimizers.Adagrad(args.learning_rate)

    def dataset_fn():
        # Each worker samples batches of the training examples on its own (unseeded): no two
        # workers read the same stream, and a restarted worker needs no position.
        return (tf.data.Dataset.random()
                .map(lambda r: synthetic_examples(
                    tf.math.floormod(r, args.examples - args.batch + 1), args.batch, args))
                .prefetch(2))

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def train_step(iterator):
        def replica_fn(batch):
            ids, label = batch
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
                    labels=label, logits=model(ids, training=True)))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        return strategy.run(replica_fn, args=(next(iterator),))

    held_out = synthetic_examples(args.examples, args.eval_examples, args)

    def evaluate():
        auc = tf.keras.metrics.AUC(num_thresholds=1000)
        auc.update_state(held_out[1], tf.sigmoid(model(held_out[0], training=False)))
        return float(auc.result())

    if args.plain:
        train_plain(args, coordinator, model, train_step, iterator, evaluate)
        return
    import trainingjob.tf  # trainingjob

    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    handler = trainingjob.tf.PreemptionCheckpointHandler(  # trainingjob
        coordinator, checkpoint, total_steps=args.steps, examples_per_step=args.batch)

    while handler.total_run_calls < args.steps:
        loss = handler.run(coordinator.schedule, train_step, args=(iterator,))  # trainingjob
        if args.step_sleep_ms:
            time.sleep(args.step_sleep_ms / 1000)
        if handler.total_run_calls % args.report_every == 0:
            handler.report(loss=float(loss.fetch()))  # trainingjob
        if args.eval_every and handler.total_run_calls % args.eval_every == 0:
            auc = evaluate()
            print(f"step {handler.total_run_calls} eval AUC {auc:.4f}", flush=True)
            handler.report(metrics={"auc": auc})  # trainingjob
    coordinator.join()

    auc = evaluate()
    handler.report(metrics={"auc": auc})  # trainingjob
    print(f"trained {handler.total_run_calls} steps; eval AUC {auc:.4f}", flush=True)


def main(argv):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    args = parse_args(argv)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        serve(resolver, args.plain)
    else:
        train(args, resolver)


if __name__ == "__main__":
    main(sys.argv[1:])
