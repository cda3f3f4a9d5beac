import grpc
import pytest
from google.rpc import error_details_pb2

import sandpod
from sandpod._errors import STATUS_TO_ERROR, error_info_reason, from_rpc_error

from .conftest import FakeRpcError, status_bytes, with_reason

EXPECTED = {
    grpc.StatusCode.NOT_FOUND: sandpod.NotFound,
    grpc.StatusCode.ALREADY_EXISTS: sandpod.AlreadyExists,
    grpc.StatusCode.INVALID_ARGUMENT: sandpod.InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: sandpod.FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: sandpod.ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: sandpod.Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: sandpod.SandboxTimeout,
    grpc.StatusCode.UNAUTHENTICATED: sandpod.Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: sandpod.PermissionDenied,
    grpc.StatusCode.CANCELLED: sandpod.Cancelled,
    grpc.StatusCode.INTERNAL: sandpod.ServerError,
}


@pytest.mark.parametrize(("code", "cls"), EXPECTED.items(), ids=lambda v: getattr(v, "name", ""))
def test_status_code_maps_to_exception(code, cls):
    err = from_rpc_error(FakeRpcError(code, "sandbox foo not found"))
    assert type(err) is cls
    assert err.code == code
    assert err.message == "sandbox foo not found"
    assert "sandbox foo not found" in str(err)


def test_every_status_code_but_ok_is_in_the_table():
    assert set(STATUS_TO_ERROR) == set(grpc.StatusCode) - {grpc.StatusCode.OK}
    assert all(issubclass(c, sandpod.SandpodError) for c in STATUS_TO_ERROR.values())


def test_request_id_is_carried():
    err = from_rpc_error(FakeRpcError(grpc.StatusCode.UNAVAILABLE, "down"), request_id="r-1")
    assert err.request_id == "r-1"
    assert "r-1" in str(err)


def test_empty_details_still_say_something():
    err = from_rpc_error(FakeRpcError(grpc.StatusCode.UNAVAILABLE, ""))
    assert err.message == "unavailable"


def test_error_info_reason_is_decoded():
    info = error_details_pb2.ErrorInfo(reason="TEMPLATE_NOT_FOUND", domain="sandpod.dev")
    retry = error_details_pb2.RetryInfo()  # another detail first: the ErrorInfo is found
    status = status_bytes(grpc.StatusCode.NOT_FOUND, "nf", retry, info)
    rpc = FakeRpcError(grpc.StatusCode.NOT_FOUND, "nf", [("grpc-status-details-bin", status)])
    assert error_info_reason(rpc) == "TEMPLATE_NOT_FOUND"
    err = from_rpc_error(rpc)
    assert err.reason == "TEMPLATE_NOT_FOUND" and type(err) is sandpod.NotFound


def test_not_found_is_the_sandbox_only_when_the_server_says_so():
    nf = grpc.StatusCode.NOT_FOUND
    gone = from_rpc_error(with_reason(nf, 'sandbox "x" not found', "SANDBOX_NOT_FOUND"))
    assert type(gone) is sandpod.SandboxNotFound and gone.reason == "SANDBOX_NOT_FOUND"
    missing = from_rpc_error(with_reason(nf, 'read_file: "f" does not exist', "FILE_NOT_FOUND"))
    assert type(missing) is sandpod.FileNotFound
    template = from_rpc_error(FakeRpcError(nf, 'template "t" not found'))
    assert type(template) is sandpod.NotFound
    for err in (gone, missing, template):
        assert isinstance(err, sandpod.NotFound) and err.code == nf
    assert not isinstance(missing, sandpod.SandboxNotFound)
    assert not isinstance(template, sandpod.SandboxNotFound)


def test_a_reason_of_another_code_narrows_nothing():
    err = from_rpc_error(
        with_reason(grpc.StatusCode.FAILED_PRECONDITION, "unclaimed", "SANDBOX_NOT_FOUND")
    )
    assert type(err) is sandpod.FailedPrecondition


def test_error_info_reason_tolerates_garbage():
    nf = grpc.StatusCode.NOT_FOUND
    info = error_details_pb2.ErrorInfo(reason="SANDBOX_NOT_FOUND", domain="sandpod.dev")
    cases = {
        "no trailers": FakeRpcError(nf, "nf"),
        "not a status": FakeRpcError(nf, "nf", [("grpc-status-details-bin", b"\xff\xff\xff")]),
        "no ErrorInfo": FakeRpcError(
            nf,
            "nf",
            [("grpc-status-details-bin", status_bytes(nf, "nf", error_details_pb2.RetryInfo()))],
        ),
        # details that belong to another status are not this error's
        "another code": FakeRpcError(
            nf,
            "nf",
            [("grpc-status-details-bin", status_bytes(grpc.StatusCode.INTERNAL, "nf", info))],
        ),
    }
    for name, rpc in cases.items():
        assert error_info_reason(rpc) == "", name
        assert from_rpc_error(rpc).reason == "", name


def test_command_failed_carries_output():
    result = sandpod.CommandResult(exit_code=3, stdout_bytes=b"out", stderr_bytes=b"boom\n")
    with pytest.raises(sandpod.CommandFailed) as info:
        result.check()
    assert info.value.exit_code == 3
    assert info.value.stdout == "out"
    assert info.value.stderr == "boom\n"
    assert "boom" in str(info.value)


def test_command_timeout_is_both_failed_and_timeout():
    result = sandpod.CommandResult(exit_code=-1, signal=9, timed_out=True, duration=1.0)
    with pytest.raises(sandpod.CommandTimeout) as info:
        result.check()
    assert isinstance(info.value, sandpod.CommandFailed)
    assert isinstance(info.value, sandpod.SandboxTimeout)
