"""Writes envd's protobuf descriptors, as the pinned e2b package ships them,
into one FileDescriptorSet (argv[1]) that protoc reads with --descriptor_set_in.

e2b's generated modules (e2b/envd/{process,filesystem}/*_pb.py) carry each
.proto file as a serialized FileDescriptorProto, the first argument of a
file_desc(...) call. They are read from the source text (ast), not imported,
so nothing of the package runs. go_package is set here: the .proto files name
none for Go.
"""

import ast
import importlib.util
import pathlib
import sys

from google.protobuf import descriptor_pb2, timestamp_pb2

GO_PACKAGE = "github.com/sandpod/sandpod/bridge/e2b/envd/{name};{name}"
MODULES = ("e2b.envd.process.process_pb", "e2b.envd.filesystem.filesystem_pb")


def serialized_descriptor(module: str) -> bytes:
    spec = importlib.util.find_spec(module.rsplit(".", 1)[0])
    if spec is None or spec.submodule_search_locations is None:
        sys.exit(f"{module}: not installed (make venv installs it)")
    path = pathlib.Path(next(iter(spec.submodule_search_locations))) / (
        module.rsplit(".", 1)[1] + ".py"
    )
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "file_desc"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, bytes)
        ):
            return node.args[0].value
    sys.exit(f"{path}: no file_desc(b'...') call found")


def main() -> None:
    fds = descriptor_pb2.FileDescriptorSet()
    ts = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    fds.file.append(ts)
    for module in MODULES:
        fd = descriptor_pb2.FileDescriptorProto.FromString(serialized_descriptor(module))
        fd.options.go_package = GO_PACKAGE.format(name=fd.package)
        fds.file.append(fd)
    pathlib.Path(sys.argv[1]).write_bytes(fds.SerializeToString(deterministic=True))


if __name__ == "__main__":
    main()
