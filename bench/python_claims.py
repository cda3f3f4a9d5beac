"""Warm claims through the bridge from the Python client, for `make bench`.

The caller fills the pool first; the claims go out 100 ms apart (the pool's
refill waits for them to stop), each ``client.claim()`` timed alone; the
sandboxes are deleted at the end. Prints ``{"warm_ms": [...], "cold": N}``
(warm claims only in warm_ms; N claims came back cold) on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import sandpod


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--address", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--template", required=True)
    ap.add_argument("--claims", type=int, default=20)
    args = ap.parse_args()

    warm: list[float] = []
    cold = 0
    claimed = []
    with sandpod.Client(args.address, namespace=args.namespace, timeout=120) as client:
        client.templates()  # connects: the claims are timed on an open connection
        for _ in range(args.claims):
            time.sleep(0.1)
            t0 = time.perf_counter()
            sb = client.claim(args.template, on_exit="delete")
            elapsed = (time.perf_counter() - t0) * 1000
            if sb.warm:
                warm.append(elapsed)
            else:
                cold += 1
            claimed.append(sb)
        for sb in claimed:
            sb.delete()
    json.dump({"warm_ms": warm, "cold": cold}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
