"""Retries across a server restart: no leaked and no duplicated sandbox."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import grpc

import sandpod


class CountingStub:
    """Wraps the client's stub and counts the failed attempts the client retried."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub
        self.failures: Counter[grpc.StatusCode] = Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._stub, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            except grpc.RpcError as err:
                self.failures[err.code()] += 1
                raise

        return call


def test_request_id_makes_claim_and_create_idempotent(client, labels):
    a = client.claim("python", labels=labels, request_id=f"claim-{labels['test']}")
    b = client.claim("python", labels=labels, request_id=f"claim-{labels['test']}")
    assert a.name == b.name and a.info.uid == b.info.uid
    c = client.create("cold", labels=labels, request_id=f"create-{labels['test']}")
    d = client.create("cold", labels=labels, request_id=f"create-{labels['test']}")
    assert c.name == d.name
    assert sorted(sb.name for sb in client.list(labels=labels)) == sorted([a.name, c.name])
    for sb in (a, c):
        sb.delete()


def test_calls_survive_a_restart_without_leaks(server, client, labels):
    before = client.claim("python", labels=labels, on_exit="keep")
    before.files.write("survivor.txt", "still here")
    counting = CountingStub(client._stub)
    client._stub = counting

    # Restart while claims are in flight: each one either finished before the stop, or
    # failed with UNAVAILABLE and was retried with its request id after the start.
    restarted = threading.Event()

    def bounce() -> None:
        server.restart(downtime=0.5)
        restarted.set()

    claimed = []
    thread = threading.Thread(target=bounce)
    thread.start()
    try:
        while not restarted.is_set() or len(claimed) < 3:
            template = "cold" if len(claimed) % 2 else "python"
            claimed.append(client.claim(template, labels=labels, on_exit="keep"))
            if len(claimed) > 60:
                break
    finally:
        thread.join()
    assert server.starts >= 2
    # Claims kept coming during the downtime: some attempts failed, and were retried.
    assert counting.failures[grpc.StatusCode.UNAVAILABLE] >= 1, counting.failures

    # Cold creates in flight during a stop, too.
    more = [client.create("cold", labels=labels, on_exit="keep") for _ in range(2)]

    listed = client.list(labels=labels)
    names = sorted(sb.name for sb in listed)
    expected = sorted({sb.name for sb in [before, *claimed, *more]})
    assert len(expected) == len(claimed) + len(more) + 1, "a claim returned a taken sandbox"
    assert names == expected, "a sandbox was leaked or lost across the restart"

    again = client.get(before.name)
    assert again.files.read_text("survivor.txt") == "still here"
    assert again.run("cat survivor.txt").stdout == "still here"
    sandpod.SandboxList(listed).delete_all()
    assert client.list(labels=labels) == []


def test_a_call_during_downtime_waits_for_the_server(server, client, labels):
    sb = client.claim("python", labels=labels)
    server.stop()
    done = threading.Event()
    result: dict[str, object] = {}

    def call() -> None:
        try:
            result["info"] = client.get(sb.name).info
        except sandpod.SandpodError as err:  # pragma: no cover - reported below
            result["error"] = err
        done.set()

    t = threading.Thread(target=call)
    t.start()
    server.start()
    t.join(180)
    assert done.is_set()
    assert "error" not in result, result.get("error")
    assert sb.run("echo after restart").stdout == "after restart\n"
    sb.delete()
