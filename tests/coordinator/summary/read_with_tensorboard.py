"""Checks that TensorBoard's own reader loads an event file written by EventFileWriter.

Usage: read_with_tensorboard.py WRITER_BINARY
Runs WRITER_BINARY to write events into a temporary directory, then reads that directory with
tensorboard's EventAccumulator. Exits 77 (skipped) when tensorboard is not installed.
"""

import os
import subprocess
import sys
import tempfile

SKIP = 77

try:
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub import errors
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow
except ImportError as error:
    print(f"SKIPPED: tensorboard is not installed ({error}); pip install tensorboard to run this")
    sys.exit(SKIP)


def read_records_strictly(path):
    """Every record of `path` through TensorBoard's record reader, which checks both CRCs and
    raises DataLossError on a mismatch (the accumulator would only log it and stop)."""
    reader = pywrap_tensorflow.PyRecordReader_New(path)
    events = []
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return events
        events.append(event_pb2.Event.FromString(reader.record()))


def main() -> int:
    writer = sys.argv[1]
    with tempfile.TemporaryDirectory() as log_dir:
        subprocess.run([writer, log_dir], check=True)
        files = os.listdir(log_dir)
        if len(files) != 1 or not files[0].startswith("events.out.tfevents."):
            print(f"FAIL: expected one events.out.tfevents.* file, found {files}")
            return 1
        events = read_records_strictly(os.path.join(log_dir, files[0]))
        if len(events) != 4 or events[0].file_version != "brain.Event:2":
            print(f"FAIL: {len(events)} records, first {events[:1]}")
            return 1
        accumulator = event_accumulator.EventAccumulator(log_dir)
        accumulator.Reload()
        tags = sorted(accumulator.Tags()["scalars"])
        expected = ["accuracy", "examples_per_sec", "loss"]
        if tags != expected:
            print(f"FAIL: scalar tags {tags}, expected {expected}")
            return 1
        loss = accumulator.Scalars("loss")
        steps = [event.step for event in loss]
        values = [event.value for event in loss]
        if steps != [1, 2, 3] or values != [2.5, 1.25, 0.625]:
            print(f"FAIL: loss steps {steps} values {values}")
            return 1
        accuracy = accumulator.Scalars("accuracy")
        if [(e.step, e.value) for e in accuracy] != [(2, 0.5), (3, 0.75)]:
            print(f"FAIL: accuracy {accuracy}")
            return 1
        if any(event.wall_time <= 0 for event in loss):
            print("FAIL: wall_time not set")
            return 1
        # The version record is read as the file's first event.
        if accumulator.FirstEventTimestamp() <= 0:
            print("FAIL: no first event timestamp")
            return 1
        print(f"OK: TensorBoard read {len(loss)} loss, {len(accuracy)} accuracy scalars")
    return 0


if __name__ == "__main__":
    sys.exit(main())
