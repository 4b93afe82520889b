"""Generates trainingjob/v1 (messages and gRPC stubs of proto/tj/v1) while the package is built.

The repository's proto/ is the single source of the wire format; the generated modules live only
in the built package (and in the source tree's ignored trainingjob/v1/ after an in-tree build).
"""
import pathlib
import re

from setuptools import setup

HERE = pathlib.Path(__file__).resolve().parent
PROTO_ROOT = HERE.parent / "proto"
# The services this package serves or calls, and what they import.
PROTOS = ["tj/v1/value.proto", "tj/v1/coordination.proto"]
GENERATED = HERE / "trainingjob" / "v1"


def _grpc_tools_version():
    from importlib.metadata import version

    return version("grpcio-tools")


def generate_stubs():
    from grpc_tools import protoc
    import grpc_tools

    missing = [p for p in PROTOS if not (PROTO_ROOT / p).is_file()]
    if missing:
        raise SystemExit(
            f"trainingjob: {PROTO_ROOT / missing[0]} not found: build the package from the "
            "repository (pip install ./python), whose proto/ holds the wire format")
    out = HERE / "build" / "proto-gen"
    out.mkdir(parents=True, exist_ok=True)
    include = str(pathlib.Path(grpc_tools.__file__).parent / "_proto")
    args = ["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out}",
            f"--grpc_python_out={out}"] + [str(PROTO_ROOT / p) for p in PROTOS]
    if protoc.main(args) != 0:
        raise SystemExit("trainingjob: protoc failed on " + ", ".join(PROTOS))
    GENERATED.mkdir(exist_ok=True)
    (GENERATED / "__init__.py").write_text('"""Generated from proto/tj/v1 at build time."""\n')
    for path in sorted((out / "tj" / "v1").glob("*.py")):
        # protoc writes imports for the proto package's path (tj.v1); the modules live here.
        text = re.sub(r"^from tj\.v1 import", "from trainingjob.v1 import", path.read_text(),
                      flags=re.MULTILINE)
        (GENERATED / path.name).write_text(text)


# Every build step (metadata, wheel) needs trainingjob/v1 to exist: generate first.
generate_stubs()

setup(
    install_requires=[f"grpcio>={_grpc_tools_version()}", "protobuf>=4.21"],
)
