"""`sandpod mcp` through the official Python MCP client (`mcp` on PyPI), for `make bench`.

Against a running `sandpod serve` (--address), three figures, each timed inside this
process:

- run_command_ms: one `run_command` of `true` (argv) after another on one MCP session
  over stdio (the session's sandbox claimed by the warm-up calls), from call_tool to its
  parsed result;
- native_exec_ms: the same `true` through the sandpod Python client (`sb.run`) on a
  sandbox of the same template, each call right after an MCP one (same load), for the
  cost of the MCP hop;
- session_ms: --sessions concurrent MCP sessions over streamable HTTP on one
  `sandpod mcp --listen`, each: connect (the client's discover probe, then initialize),
  `run_command true` (which claims the session's sandbox), end of the session (DELETE);
  sessions_wall_ms from the first connect to the last end, and sessions_gone_ms until
  every one of their sandboxes is deleted.

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import time

from mcp import StdioServerParameters
from mcp.client import Client

import sandpod

TRUE = {"argv": ["true"]}


def ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def result(res: object) -> dict:
    if res.is_error:  # type: ignore[attr-defined]
        raise RuntimeError(f"tool error: {res.content}")  # type: ignore[attr-defined]
    return res.structured_content  # type: ignore[attr-defined]


async def round_trips(args: argparse.Namespace) -> tuple[list[float], list[float]]:
    """The MCP and the native calls alternate, so that both see the same load."""
    params = StdioServerParameters(
        command=args.bin, args=["mcp", "--address", args.address, "--template", args.template]
    )
    mcp_ms: list[float] = []
    native_ms: list[float] = []
    with sandpod.Client(args.address, timeout=120, progress=False) as client:
        sb = client.claim(args.template)
        try:
            async with Client(params) as c:
                for _ in range(5):  # the first claims the session's sandbox; all warm up
                    result(await c.call_tool("run_command", TRUE))
                    sb.run(["true"])
                for _ in range(args.calls):
                    t0 = time.perf_counter()
                    r = result(await c.call_tool("run_command", TRUE))
                    mcp_ms.append(ms(t0))
                    assert r["exit_code"] == 0, r
                    t0 = time.perf_counter()
                    sb.run(["true"])
                    native_ms.append(ms(t0))
        finally:
            sb.delete()
    return mcp_ms, native_ms


async def one_session(url: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    async with Client(url) as c:
        name = result(await c.call_tool("run_command", TRUE))["sandbox"]
    return ms(t0), name


async def concurrent_sessions(args: argparse.Namespace) -> tuple[list[float], float, float]:
    port = free_port()
    argv = [args.bin, "mcp", "--address", args.address, "--template", args.template]
    proc = subprocess.Popen([*argv, "--listen", f"127.0.0.1:{port}"], stderr=sys.stderr)
    try:
        end = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > end or proc.poll() is not None:
                raise RuntimeError("sandpod mcp --listen did not start")
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        t0 = time.perf_counter()
        done = await asyncio.gather(*(one_session(url) for _ in range(args.sessions)))
        wall = ms(t0)
        with sandpod.Client(args.address, timeout=120, progress=False) as client:
            for _, name in done:
                while True:
                    try:
                        client.get(name)
                    except sandpod.SandboxNotFound:
                        break
                    time.sleep(0.01)
        gone = ms(t0)
        return [d for d, _ in done], wall, gone
    finally:
        proc.terminate()
        proc.wait(120)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the sandpod binary")
    ap.add_argument("--address", required=True, help="the sandpod API")
    ap.add_argument("--template", default="python")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--sessions", type=int, default=32)
    args = ap.parse_args()

    stdio, native = asyncio.run(round_trips(args))
    sessions, wall, gone = asyncio.run(concurrent_sessions(args))
    json.dump(
        {
            "run_command_ms": stdio,
            "native_exec_ms": native,
            "session_ms": sessions,
            "sessions_wall_ms": wall,
            "sessions_gone_ms": gone,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
