"""Runs the real `sandpod serve` for the integration tests.

The binary is $SANDPOD_BIN, else <repo>/bin/sandpod, built with `go build` when missing.
One server (with a warm pool of 5 "python" sandboxes) is shared by the session; tests
that restart it use the `server.restart()` helper, which keeps the port and state dir.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

import sandpod

REPO = Path(__file__).resolve().parents[3]
READY_TIMEOUT = 120.0  # generous: a loaded 2-core machine
RACE_MARKER = "WARNING: DATA RACE"  # opens each report of a binary built with -race

# The "python" template every test server shares (the Go tests and `make bench` too).
PYTHON_TEMPLATE = (REPO / "hack" / "fixtures" / "python-template.yaml").read_text()


def python_pool(replicas: int) -> str:
    """The python template with a warm pool of the given size."""
    return f"""{PYTHON_TEMPLATE}---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: python
spec:
  templateRef:
    name: python
  replicas: {replicas}
"""


CONFIG = (
    python_pool(5)
    + """---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: cold
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
  lifecycle:
    defaultTTL: 1h
  autoResume: false
"""
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def searchable(path: Path) -> None:
    """Lets sandboxes, which reach their root file systems under the state
    directory as unprivileged host ids, pass through path and its parents
    under the temporary directory (search only, not list)."""
    tmp = Path(tempfile.gettempdir()).resolve()
    path = path.resolve()
    while path != tmp and tmp in path.parents:
        path.chmod(path.stat().st_mode | 0o111)
        path = path.parent


def sandpod_binary() -> Path:
    env = os.environ.get("SANDPOD_BIN")
    if env:
        return Path(env)
    binary = REPO / "bin" / "sandpod"
    if not binary.exists():
        if shutil.which("go") is None:
            pytest.skip("bin/sandpod is missing and there is no Go toolchain to build it")
        subprocess.run(
            ["go", "build", "-o", str(binary), "./cmd/sandpod"],
            cwd=REPO,
            check=True,
            timeout=1800,
        )
    return binary


def health_serving(address: str, timeout: float) -> bool:
    """grpc.health.v1.Health/Check == SERVING, without grpcio-health-checking."""
    with grpc.insecure_channel(address) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        try:
            resp = check(b"", timeout=timeout)
        except grpc.RpcError:
            return False
        return resp == b"\x08\x01"  # HealthCheckResponse{status: SERVING}


class Server:
    """One `sandpod serve` process; restart() keeps its port and state."""

    def __init__(
        self,
        binary: Path,
        workdir: Path,
        token: str | None = None,
        config: str = CONFIG,
        extra_args: list[str] | None = None,
    ) -> None:
        self.binary = binary
        self.workdir = workdir
        searchable(workdir)
        self.state_dir = workdir / "state"
        self.config = workdir / "config.yaml"
        self.config.write_text(config)
        self.log_path = workdir / "server.log"
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.preview_address = f"127.0.0.1:{free_port()}"
        self.token = token
        self.token_file: Path | None = None
        if token:
            self.token_file = workdir / "token"
            self.token_file.write_text(token + "\n")
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.extra_args = list(extra_args or [])  # appended to `sandpod serve`
        self.race_checked = 0  # bytes of the log check_no_race has read

    def start(self) -> None:
        args = [
            str(self.binary),
            "serve",
            "--listen",
            self.address,
            "--state-dir",
            str(self.state_dir),
            "--config",
            str(self.config),
            "--preview-listen",
            self.preview_address,
        ]
        if self.token_file:
            args += ["--token-file", str(self.token_file)]
        # The binary is a private copy: point it at the runc `make build` links
        # beside the original.
        args += ["--runc", str(sandpod_binary().parent / "runc")]
        args += self.extra_args
        self.starts += 1
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        log.write(f"\n=== start #{self.starts}: {' '.join(args)}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        end = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sandpod serve exited early:\n{self.log_tail()}")
            if health_serving(self.address, 2.0):
                return
            time.sleep(0.1)
        raise RuntimeError(f"sandpod serve not SERVING after {READY_TIMEOUT}s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def close(self) -> None:
        """Stops the server, then every sandbox its state directory still runs.

        Sandboxes outlive their server by design; a pool member still starting
        when the tests ended would otherwise outlive the test run.
        """
        self.stop()
        subprocess.run(
            [str(self.binary), "purge", "--state-dir", str(self.state_dir)],
            check=True,
            capture_output=True,
        )
        self.check_no_race()

    def check_no_race(self) -> None:
        """Fails on a race report in the log since the last check.

        With a binary built with -race (``make test``'s bin/sandpod-race, GORACE=
        halt_on_error=1) the first race also ends serve with exit status 66.
        """
        try:
            log = self.log_path.read_bytes()[self.race_checked :]
        except OSError:
            return
        self.race_checked += len(log)
        text = log.decode(errors="replace")
        if RACE_MARKER in text:
            report = text[text.index(RACE_MARKER) :]
            raise AssertionError(f"sandpod serve reported a data race:\n{report[:20000]}")

    def restart(self, downtime: float = 0.0) -> None:
        """SIGTERM, wait ``downtime`` seconds, start again on the same port and state."""
        self.stop()
        self.check_no_race()
        time.sleep(downtime)
        self.start()

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"


@pytest.fixture(scope="session")
def sandpod_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A private copy: rebuilding bin/sandpod during the run cannot change the server
    # (or the agents it starts) under the tests.
    copy = tmp_path_factory.mktemp("bin") / "sandpod"
    shutil.copy2(sandpod_binary(), copy)
    return copy


@pytest.fixture(scope="session")
def server(sandpod_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(sandpod_bin, tmp_path_factory.mktemp("sandpod"))
    srv.start()
    yield srv
    srv.close()


def make_client(server: Server, **kwargs: object) -> sandpod.Client:
    kwargs.setdefault("timeout", 120)
    kwargs.setdefault("progress", False)
    return sandpod.Client(server.address, token=server.token, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def client(server: Server) -> Iterator[sandpod.Client]:
    with make_client(server) as c:
        yield c


@pytest.fixture
def labels() -> dict[str, str]:
    """A label unique to the test, to find (and count) the sandboxes it made."""
    return {"test": uuid.uuid4().hex[:12]}


@pytest.fixture
def sandbox(client: sandpod.Client, labels: dict[str, str]) -> Iterator[sandpod.Sandbox]:
    with client.claim("python", labels=labels) as sb:
        yield sb
