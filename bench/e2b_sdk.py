"""E2B's SDK against sandpod's E2B API, next to sandpod's own Python client on
the same server, for `make bench`.

Two figures each way, timed in Python, one call at a time:

- cycle: ``Sandbox.create()`` + ``commands.run("true")`` + ``kill()`` (E2B), and
  ``client.claim()`` + ``sb.run("true")`` + ``sb.delete()`` (sandpod), from a
  full warm pool (the caller fills it; each cycle takes a member, so the pool
  refills between cycles: the pause after each cycle lets it);
- run: ``commands.run("true")`` (E2B) and ``sb.run("true")`` (sandpod) on one
  sandbox each.

A first call of each kind opens the connections before anything is timed.
Prints ``{"e2b_cycle_ms": [...], "native_cycle_ms": [...], "e2b_run_ms": [...],
"native_run_ms": [...]}`` on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import sandpod


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--e2b-url", required=True, help="http://host:port of --e2b-listen")
    ap.add_argument("--address", required=True, help="the gRPC API")
    ap.add_argument("--template", required=True)
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--refill-pause", type=float, default=1.0)
    args = ap.parse_args()

    os.environ.update(E2B_API_URL=args.e2b_url, E2B_SANDBOX_URL=args.e2b_url)
    os.environ.setdefault("E2B_API_KEY", "bench")
    from e2b import Sandbox  # after the environment: the SDK reads it

    out: dict[str, list[float]] = {
        k: [] for k in ("e2b_cycle_ms", "native_cycle_ms", "e2b_run_ms", "native_run_ms")
    }
    with sandpod.Client(args.address, progress=False) as client:
        warm_e2b = Sandbox.create(args.template)
        warm_native = client.claim(args.template)
        try:
            warm_e2b.commands.run("true")
            warm_native.run("true")
            for _ in range(args.cycles):
                for key, cycle in (
                    ("e2b_cycle_ms", lambda: e2b_cycle(Sandbox, args.template)),
                    ("native_cycle_ms", lambda: native_cycle(client, args.template)),
                ):
                    time.sleep(args.refill_pause)
                    t0 = time.perf_counter()
                    cycle()
                    out[key].append((time.perf_counter() - t0) * 1000)
            for _ in range(args.runs):
                t0 = time.perf_counter()
                warm_e2b.commands.run("true")
                out["e2b_run_ms"].append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                warm_native.run("true")
                out["native_run_ms"].append((time.perf_counter() - t0) * 1000)
        finally:
            warm_e2b.kill()
            warm_native.delete()
    json.dump(out, sys.stdout)
    return 0


def e2b_cycle(sandbox_cls: type, template: str) -> None:
    sb = sandbox_cls.create(template)
    sb.commands.run("true")
    sb.kill()


def native_cycle(client: sandpod.Client, template: str) -> None:
    sb = client.claim(template)
    sb.run("true")
    sb.delete()


if __name__ == "__main__":
    sys.exit(main())
