#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into fuzz/corpus/<target>/ (docs/fuzzing.md).

Small valid inputs (so the fuzzers start inside each format, past its checksums) and a few invalid
ones (the shapes of past findings). Rerun after changing a format; the output is deterministic.
Crash inputs found later are added to the corpus by hand, next to these.
"""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data)


# ---- CRC-32C (Castagnoli), as coordinator/checkpoint/crc32c.cc ----
def _table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_T = _table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(crc32c(length))) + data + struct.pack(
        "<I", masked(crc32c(data)))


# ---- protobuf wire format ----
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def varint_field(number, value):
    return varint(number << 3) + varint(value)


def tensor(shape, floats):
    packed = b"".join(varint(d) for d in shape)
    data = struct.pack("<%df" % len(floats), *floats)
    return varint_field(1, 1) + field(2, packed) + (field(3, data) if floats else b"")


MANIFEST_YAML = """apiVersion: trainingjob.dev/v1alpha1
kind: TrainingJob
metadata: {name: digits}
spec:
  replicaSpecs:
    Coordinator:
      replicas: 1
      template: &pod
        spec:
          containers: [{name: main, image: tj:latest, command: [tj-train], args: [--steps=10]}]
    PS: {replicas: 1, template: *pod}
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template: *pod
  runPolicy: {activeDeadlineSeconds: 600, backoffLimit: 3}
"""


def main():
    # manifest_yaml_fuzzer
    write("manifest_yaml_fuzzer", "valid.yaml", MANIFEST_YAML)
    with open(os.path.join(ROOT, "..", "..", "examples", "digits.yaml")) as f:
        write("manifest_yaml_fuzzer", "digits.yaml", f.read())
    write("manifest_yaml_fuzzer", "recursive-alias.yaml", "a: &a [*a, *a]\n")
    laughs = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for level in "bcdefghi":
        below = chr(ord(level) - 1)
        laughs += "%s: &%s [%s]\n" % (level, level, ", ".join(["*" + below] * 9))
    write("manifest_yaml_fuzzer", "nine-level-alias-bomb.yaml", laughs)
    write("manifest_yaml_fuzzer", "merge-keys.yaml", "d: &d {x: 1}\ne: {<<: [*d], y: !!int 0x10}\n")
    write("manifest_yaml_fuzzer", "deep.yaml", "a: " + "[" * 200 + "]" * 200 + "\n")
    write("manifest_yaml_fuzzer", "two-documents.yaml", "a: 1\n---\nb: 2\n")

    # trainingjob_json_fuzzer
    job = {
        "apiVersion": "trainingjob.dev/v1alpha1", "kind": "TrainingJob",
        "metadata": {"name": "j", "namespace": "default", "uid": "u-1", "generation": 2},
        "spec": {"replicaSpecs": {
            t: {"replicas": n, "template": {"spec": {"containers": [
                {"name": "main", "image": "img", "command": ["tj-train"],
                 "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}}
            for t, n in (("Coordinator", 1), ("PS", 2), ("Worker", 3))},
            "runPolicy": {"backoffLimit": 2, "suspend": False}},
        "status": {"phase": "Running", "restartCount": 1,
                   "conditions": [{"type": "Running", "status": "True",
                                   "lastTransitionTime": "2024-05-01T12:00:00Z"}],
                   "replicaStatuses": {"Worker": {"active": 3}}},
    }
    write("trainingjob_json_fuzzer", "valid.json", json.dumps(job))
    write("trainingjob_json_fuzzer", "wrong-types.json",
          '{"kind": 1, "spec": {"replicaSpecs": [], "runPolicy": "x"}, "status": []}')
    write("trainingjob_json_fuzzer", "deep.json", "[" * 300 + "]" * 300)

    # tf_config_fuzzer
    write("tf_config_fuzzer", "valid.json", json.dumps({
        "cluster": {"chief": ["c:2222"], "ps": ["p0:2222", "p1:2222"],
                    "worker": ["w0:2222", "w1:2222"]},
        "task": {"type": "worker", "index": 1}, "environment": "cloud", "rpc_layer": "grpc"}))
    write("tf_config_fuzzer", "sparse.json",
          '{"cluster": {"worker": {"0": "w0:1", "7": "[::1]:2"}}, "task": {"type": "worker", "index": "7"}}')
    write("tf_config_fuzzer", "bad-index.json",
          '{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 99999999999}}')

    # kubeconfig_fuzzer
    write("kubeconfig_fuzzer", "valid.yaml", """apiVersion: v1
kind: Config
current-context: main
clusters:
- name: c1
  cluster: {server: "https://10.1.1.1:6443/", certificate-authority-data: Q0E=}
users:
- name: u1
  user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ, token: abc}
- name: u2
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true, args: [a],
           env: [{name: A, value: b}], interactiveMode: Never}
contexts:
- name: main
  context: {cluster: c1, user: u1, namespace: team-a}
- name: ex
  context: {cluster: c1, user: u2}
""")
    write("kubeconfig_fuzzer", "scalar-items.yaml", "clusters: [abc]\nusers: [1]\ncontexts: [x]\n")
    write("kubeconfig_fuzzer", "recursive-alias.yaml", "clusters: &a [*a]\n")

    # watch_stream_fuzzer: first byte picks the chunk size
    events = "".join(json.dumps({"type": t, "object": {"kind": "Pod", "metadata": {
        "name": "p%d" % i, "resourceVersion": str(i)}}}) + "\n"
        for i, t in enumerate(["ADDED", "MODIFIED", "BOOKMARK", "DELETED"]))
    write("watch_stream_fuzzer", "events", b"\x07" + events.encode())
    write("watch_stream_fuzzer", "split-crlf", b"\x00" + events.replace("\n", "\r\n").encode())
    write("watch_stream_fuzzer", "error-event",
          b"\x03" + b'{"type":"ERROR","object":{"kind":"Status","code":410}}\n')
    write("watch_stream_fuzzer", "truncated", b"\x05" + b'{"type":"ADDED","obj')

    # ps_push_fuzzer: first byte picks the slice size; then a PushRequest
    push = field(1, b"w") + field(1, b"b") + field(2, tensor([2, 2], [1, 2, 3, 4])) + field(
        2, tensor([2], [0.5, -0.5]))
    write("ps_push_fuzzer", "valid", b"\x03" + push)
    write("ps_push_fuzzer", "declares-768MiB-name", b"\x00" + field(1, b"")[:1] + varint(768 << 20))
    write("ps_push_fuzzer", "declares-size-max", b"\x00\x0a" + varint((1 << 64) - 1))
    write("ps_push_fuzzer", "unknown-fields", b"\x1f" + varint_field(9, 5) + field(7, b"xyz") + push)

    # training_progress_fuzzer: a coordinator's progress as it publishes it
    write("training_progress_fuzzer", "training.json", json.dumps({
        "state": "training", "step": 1200, "totalSteps": 5000, "epoch": 2, "loss": 0.31,
        "examplesPerSecond": 5120.5, "metrics": {"accuracy": 0.91, "auc": 0.95},
        "lastCheckpointStep": 1000, "restoredFromStep": 800, "message": "checkpoint 1000 saved",
        "events": ["2026-11-25T12:00:00Z preemption notice for worker 1"],
        "updated": "2026-11-25T12:00:05Z"}))
    write("training_progress_fuzzer", "minimal.json", '{"step": 0}')
    write("training_progress_fuzzer", "wrong-types.json",
          '{"step": "1", "loss": [], "metrics": {"a": "b"}, "events": [1]}')

    # push_announcement_fuzzer: flags (bit 0: header present), the PS's largest message (8 bytes,
    # little-endian), then the header's value
    limit = struct.pack("<Q", 512 << 20)
    write("push_announcement_fuzzer", "valid", b"\x01" + limit + b"1048576")
    write("push_announcement_fuzzer", "missing", b"\x00" + limit)
    write("push_announcement_fuzzer", "zero", b"\x01" + limit + b"0")
    write("push_announcement_fuzzer", "over-the-limit", b"\x01" + limit + b"536870913")
    write("push_announcement_fuzzer", "negative", b"\x01" + limit + b"-5")
    write("push_announcement_fuzzer", "int64-overflow", b"\x01" + limit + b"9223372036854775808")
    write("push_announcement_fuzzer", "exponent", b"\x01" + limit + b"1e6")
    write("push_announcement_fuzzer", "padded-sign", b"\x01" + limit + b" +42 ")
    write("push_announcement_fuzzer", "long-text", b"\x01" + limit + b"9" * 4096)

    # ps_pull_response_fuzzer
    pull = field(1, tensor([3], [1, 2, 3])) + field(1, tensor([0], [])) + field(
        1, tensor([2, 2], [0, 0, 0, 0]))
    write("ps_pull_response_fuzzer", "valid", b"\x05" + pull)
    write("ps_pull_response_fuzzer", "declares-huge-data",
          b"\x00" + field(1, varint(3 << 3 | 2) + varint(1 << 40)))

    # ps_lookup_fuzzer: even first byte = LookupRequest, odd = PushSparseRequest
    ids = struct.pack("<3q", 1, -7, 1 << 40)
    write("ps_lookup_fuzzer", "lookup", b"\x00" + field(1, field(1, b"emb") + field(2, ids)) +
          field(1, field(1, b"wide") + field(2, ids[:8])))
    grads = struct.pack("<12f", *([0.25] * 12))
    write("ps_lookup_fuzzer", "push-sparse",
          b"\x01" + field(1, field(1, b"emb") + field(2, ids) + field(3, grads)))
    write("ps_lookup_fuzzer", "unknown-table", b"\x00" + field(1, field(1, b"nope") + field(2, ids)))
    # A SparseGradients declaring 512 MiB around a name declaring 500 MB, in 16 bytes: protobuf
    # reserves its kSafeStringSize (50 MB) before it finds the input short (docs/fuzzing.md).
    write("ps_lookup_fuzzer", "protobuf-nested-length-past-input",
          b"\x01" + varint(1 << 3 | 2) + varint(1 << 29) + varint(1 << 3 | 2) +
          varint(500_000_000) + b"emb")

    # record_file_fuzzer
    write("record_file_fuzzer", "two-records", record(b"hello") + record(b"x" * 300))
    write("record_file_fuzzer", "empty-record", record(b""))
    write("record_file_fuzzer", "truncated", record(b"abcdef")[:-3])
    big = struct.pack("<Q", 1 << 62)
    write("record_file_fuzzer", "declares-2^62-bytes", big + struct.pack("<I", masked(crc32c(big))))

    # checkpoint_manifest_fuzzer: the checksum is CRC-32C of the compact, key-sorted body
    body = {"format_version": 1, "step": 120, "created_time": "2024-05-01T12:00:00Z",
            "state": {"epoch": 3, "rng": [1, 2]},
            "shards": [{"name": "ps-0.shard", "bytes": 4096, "crc32c": 305419896}]}
    compact = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    body["manifest_crc32c"] = crc32c(compact)
    write("checkpoint_manifest_fuzzer", "valid.json", json.dumps(body, indent=2) + "\n")
    write("checkpoint_manifest_fuzzer", "bad-checksum.json", '{"manifest_crc32c": 1, "step": 1}')
    write("checkpoint_manifest_fuzzer", "deep.json", '{"state":' + "[" * 300 + "]" * 300 + "}")

    # s3_xml_fuzzer: responses as S3 (and MinIO) send them, and the shapes of XML attacks
    ns = ' xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
    decl = '<?xml version="1.0" encoding="UTF-8"?>\n'
    contents = "".join(
        "<Contents><Key>ckpt/step-%08d/ps-%d.shard</Key>"
        "<LastModified>2026-11-25T12:00:00.000Z</LastModified>"
        '<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>%d</Size>'
        "<StorageClass>STANDARD</StorageClass></Contents>" % (100 * i, i % 2, 4096 * i)
        for i in range(1, 4))
    write("s3_xml_fuzzer", "list-page.xml",
          decl + "<ListBucketResult%s><Name>bucket</Name><Prefix>ckpt/</Prefix>"
          "<KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>%s"
          "</ListBucketResult>" % (ns, contents))
    write("s3_xml_fuzzer", "list-truncated.xml",
          decl + "<ListBucketResult%s><Name>bucket</Name><IsTruncated>true</IsTruncated>"
          "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
          "%s</ListBucketResult>" % (ns, contents))
    write("s3_xml_fuzzer", "list-empty.xml",
          decl + "<ListBucketResult%s><Name>bucket</Name><KeyCount>0</KeyCount>"
          "<IsTruncated>false</IsTruncated></ListBucketResult>" % ns)
    write("s3_xml_fuzzer", "initiate-multipart.xml",
          decl + "<InitiateMultipartUploadResult%s><Bucket>bucket</Bucket>"
          "<Key>ckpt/step-00000100/ps-0.shard</Key>"
          "<UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>"
          "</InitiateMultipartUploadResult>" % ns)
    write("s3_xml_fuzzer", "complete-multipart.xml",
          decl + "<CompleteMultipartUploadResult%s><Location>http://bucket.s3/ckpt/x</Location>"
          "<Bucket>bucket</Bucket><Key>ckpt/x</Key><ETag>&quot;3858f62230ac3c915f300c664312c11f-9"
          "&quot;</ETag></CompleteMultipartUploadResult>" % ns)
    write("s3_xml_fuzzer", "error-no-such-bucket.xml",
          decl + "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist"
          "</Message><BucketName>bucket</BucketName><Resource>/bucket</Resource>"
          "<RequestId>4442587FB7D0A2F9</RequestId></Error>")
    write("s3_xml_fuzzer", "error-in-200.xml",
          decl + "<Error><Code>InternalError</Code><Message>We encountered an internal error."
          " Please try again.</Message></Error>")
    write("s3_xml_fuzzer", "cdata-and-comments.xml",
          "<!-- c --><Error><Code><![CDATA[SlowDown]]></Code><?pi x?><Message>a&amp;b&#x41;"
          "</Message></Error>")
    lol = '<!ENTITY lol0 "lol">'
    for level in range(1, 10):
        lol += '<!ENTITY lol%d "%s">' % (level, ("&lol%d;" % (level - 1)) * 10)
    write("s3_xml_fuzzer", "billion-laughs.xml",
          '<?xml version="1.0"?><!DOCTYPE Error [%s]><Error><Code>&lol9;</Code></Error>' % lol)
    write("s3_xml_fuzzer", "quadratic-blowup.xml",
          '<!DOCTYPE Error [<!ENTITY a "%s">]><Error><Code>%s</Code></Error>'
          % ("x" * 16000, "&a;" * 3000))
    write("s3_xml_fuzzer", "external-entity.xml",
          '<?xml version="1.0"?><!DOCTYPE Error [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
          "<Error><Code>&x;</Code></Error>")
    write("s3_xml_fuzzer", "external-dtd.xml",
          '<?xml version="1.0"?><!DOCTYPE ListBucketResult SYSTEM "http://169.254.169.254/x.dtd">'
          "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>")
    write("s3_xml_fuzzer", "deep.xml", "<Error>" + "<a>" * 5000 + "</a>" * 5000 + "</Error>")
    write("s3_xml_fuzzer", "huge-attribute.xml",
          '<ListBucketResult a="%s"><Contents><Key k="%s">k</Key><Size>1</Size></Contents>'
          "</ListBucketResult>" % ("x" * 30000, "y" * 30000))
    write("s3_xml_fuzzer", "bad-size.xml",
          "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>")
    write("s3_xml_fuzzer", "utf16.xml",
          "\ufeff<Error><Code>AccessDenied</Code></Error>".encode("utf-16-le"))


if __name__ == "__main__":
    main()
