"""Warm claims over the HTTP/JSON API from Python's httpx, for `make bench`.

The caller fills the pool first. Each ``POST /v1/sandboxes:claim`` is timed
alone, on one keep-alive ``httpx.Client`` (as a service calling sandpod
would), from request to parsed JSON; the sandboxes are deleted at the end.
Then one ``GET /v1/sandboxes/{name}`` of each, timed the same way: the round
trip of a small call, which is what the HTTP layer costs over gRPC. Prints
``{"warm_ms": [...], "get_ms": [...], "cold": N}`` (warm claims only in
warm_ms) on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import httpx


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="base URL of --http-listen")
    ap.add_argument("--template", required=True)
    ap.add_argument("--claims", type=int, default=20)
    ap.add_argument("--token", default="")
    args = ap.parse_args()

    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    warm: list[float] = []
    cold = 0
    names: list[str] = []
    with httpx.Client(base_url=args.url, headers=headers, timeout=120) as http:
        # One request first, so that the connection is open (and httpx warm)
        # before anything is timed, as in a long-lived service.
        http.get("/v1/templates").raise_for_status()
        for _ in range(args.claims):
            t0 = time.perf_counter()
            resp = http.post("/v1/sandboxes:claim", json={"template": args.template})
            body = resp.json()
            elapsed = (time.perf_counter() - t0) * 1000
            if resp.status_code != 200:
                print(f"claim: HTTP {resp.status_code}: {body}", file=sys.stderr)
                return 1
            names.append(body["sandbox"]["name"])
            if body["warm"]:
                warm.append(elapsed)
            else:
                cold += 1
        got: list[float] = []
        for name in names:
            t0 = time.perf_counter()
            resp = http.get(f"/v1/sandboxes/{name}")
            resp.json()
            got.append((time.perf_counter() - t0) * 1000)
            resp.raise_for_status()
        for name in names:
            http.delete(f"/v1/sandboxes/{name}").raise_for_status()
    json.dump({"warm_ms": warm, "get_ms": got, "cold": cold}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
