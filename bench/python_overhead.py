"""How much time the sandpod client adds over a bare gRPC call, for claim and for run.

Each iteration makes one bare call (the generated stub on a default channel, nothing
else), one through the stub on the client's own channel (its options: keepalive, no
built-in gRPC retries), and one client call, in rotating order, so all see the same
server and machine load; the figures are medians. Claims are counted separately for
warm and cold ones, as they differ by much more than the client's overhead.

    PYTHONPATH=clients/python .venv/bin/python bench/python_overhead.py
    (after `pip install .`, or with PYTHONPATH as above; --address to use a running server)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc

import sandpod
from sandpod.v1 import exec_pb2, sandbox_service_pb2, sandbox_service_pb2_grpc

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = "bench"
CONFIG = f"""\
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: {TEMPLATE}
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
  lifecycle:
    defaultTTL: 1h
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: {TEMPLATE}
spec:
  templateRef:
    name: {TEMPLATE}
  replicas: {{replicas}}
"""


@contextlib.contextmanager
def local_server(replicas: int) -> Iterator[str]:
    binary = os.environ.get("SANDPOD_BIN") or str(REPO / "bin" / "sandpod")
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
        s.close()
        config = Path(tmp) / "config.yaml"
        config.write_text(CONFIG.format(replicas=replicas))
        log = open(Path(tmp) / "server.log", "wb")  # noqa: SIM115
        args = [binary, "serve", "--listen", address, "--state-dir", f"{tmp}/state"]
        proc = subprocess.Popen([*args, "--config", str(config)], stdout=log, stderr=log)
        try:
            with grpc.insecure_channel(address) as ch:
                check = ch.unary_unary("/grpc.health.v1.Health/Check")
                for _ in range(600):
                    with contextlib.suppress(grpc.RpcError):
                        if check(b"", timeout=1) == b"\x08\x01":
                            break
                    time.sleep(0.1)
            yield address
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
            log.close()


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def ms(xs: list[float]) -> str:
    if not xs:
        return "      n/a"
    return f"{statistics.median(xs) * 1e3:9.3f}"


def wait_pool(client: sandpod.Client, ready: int, limit: float = 120) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if client.pool(TEMPLATE).ready_replicas >= ready:
            return
        time.sleep(0.1)


def bench(address: str, runs: int, replicas: int) -> None:
    channel = grpc.insecure_channel(address)
    stub = sandbox_service_pb2_grpc.SandboxServiceStub(channel)
    client = sandpod.Client(address, progress=False, timeout=120)

    # --- claim ---------------------------------------------------------------------
    bare: dict[bool, list[float]] = {True: [], False: []}
    same: dict[bool, list[float]] = {True: [], False: []}  # the stub, on the client's channel
    ours: dict[bool, list[float]] = {True: [], False: []}
    last_resp = None

    def bare_claim() -> None:
        nonlocal last_resp
        req = sandbox_service_pb2.ClaimSandboxRequest(
            template=TEMPLATE, namespace="default", request_id=str(uuid.uuid4())
        )
        dt, resp = timed(lambda: stub.ClaimSandbox(req, timeout=120))
        bare[resp.warm].append(dt)
        last_resp = resp
        stub.DeleteSandbox(
            sandbox_service_pb2.DeleteSandboxRequest(
                name=resp.sandbox.name, namespace=resp.sandbox.namespace
            ),
            timeout=120,
        )

    def same_channel_claim() -> None:
        req = sandbox_service_pb2.ClaimSandboxRequest(
            template=TEMPLATE, namespace="default", request_id=str(uuid.uuid4())
        )
        dt, resp = timed(lambda: client._stub.ClaimSandbox(req, timeout=120))
        same[resp.warm].append(dt)
        stub.DeleteSandbox(
            sandbox_service_pb2.DeleteSandboxRequest(
                name=resp.sandbox.name, namespace=resp.sandbox.namespace
            ),
            timeout=120,
        )

    def client_claim() -> None:
        dt, sb = timed(lambda: client.claim(TEMPLATE))
        ours[bool(sb.warm)].append(dt)
        sb.delete()

    order = [bare_claim, same_channel_claim, client_claim]
    for i in range(runs):
        if i % max(1, replicas // 6) == 0:
            wait_pool(client, replicas // 2)  # keep the claims warm for every side
        # Rotate who goes first, so none always meets the pool refilling.
        for fn in order[i % 3 :] + order[: i % 3]:
            fn()

    # The client's own CPU time per claim: the same call over a stub that answers at
    # once with a real response (no network, no server).
    class InstantStub:
        def ClaimSandbox(self, req: object, **kwargs: object) -> object:  # noqa: N802
            return last_resp

    offline = sandpod.Client(address, progress=False)
    offline._stub = InstantStub()  # type: ignore[assignment]
    cpu_claim = [timed(lambda: offline.claim(TEMPLATE))[0] for _ in range(runs * 10)]
    offline.close()

    # --- run -----------------------------------------------------------------------
    sb = client.claim(TEMPLATE)
    start = exec_pb2.ExecRequest(
        start=exec_pb2.ExecStart(sandbox=sb.name, namespace=sb.namespace, argv=["true"])
    )
    close = exec_pb2.ExecRequest(close_stdin=True)

    def bare_run() -> int:
        for resp in stub.Exec(iter([start, close]), timeout=120):
            if resp.WhichOneof("msg") == "exit":
                return resp.exit.exit_code
        raise RuntimeError("no exit")

    bare_exec: list[float] = []
    our_exec: list[float] = []
    for _ in range(10):  # warm up both paths
        bare_run()
        sb.run(["true"])
    for i in range(runs):
        if i % 2:
            bare_exec.append(timed(bare_run)[0])
            our_exec.append(timed(lambda: sb.run(["true"]))[0])
        else:
            our_exec.append(timed(lambda: sb.run(["true"]))[0])
            bare_exec.append(timed(bare_run)[0])

    async def async_runs() -> list[float]:
        async with sandpod.AsyncClient(address, progress=False, timeout=120) as ac:
            asb = await ac.get(sb.name)
            out = []
            for _ in range(10):
                await asb.run(["true"])
            for _ in range(runs):
                t0 = time.perf_counter()
                await asb.run(["true"])
                out.append(time.perf_counter() - t0)
            return out

    our_async_exec = asyncio.run(async_runs())
    sb.delete()
    client.close()
    channel.close()

    def row(name: str, b: list[float], o: list[float]) -> str:
        if not b or not o:
            return f"{name:<28}{ms(b)}{ms(o)}       n/a  (bare n={len(b)}, client n={len(o)})"
        diff = (statistics.median(o) - statistics.median(b)) * 1e3
        return f"{name:<28}{ms(b)}{ms(o)}{diff:+10.3f}  (bare n={len(b)}, client n={len(o)})"

    print(f"median latency in ms over {runs} runs, {address}, python {sys.version.split()[0]}")
    print(f"{'call':<28}{'bare gRPC':>9}{'client':>9}{'overhead':>10}")
    print(row("claim (warm)", bare[True], ours[True]))
    print(row("claim (warm), same channel", same[True], ours[True]))
    print(row("claim (cold)", bare[False], ours[False]))
    print(row("run ['true'] (sync)", bare_exec, our_exec))
    print(row("run ['true'] (asyncio)", bare_exec, our_async_exec))
    print(f"{'client CPU per claim':<28}{'':>9}{ms(cpu_claim)}  (no network, n={len(cpu_claim)})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--address", help="use this server instead of starting bin/sandpod")
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--replicas", type=int, default=20, help="warm pool size (own server)")
    args = p.parse_args()
    if args.address:
        bench(args.address, args.runs, args.replicas)
        return
    with local_server(args.replicas) as address:
        bench(address, args.runs, args.replicas)


if __name__ == "__main__":
    main()
