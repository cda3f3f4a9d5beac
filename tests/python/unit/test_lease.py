"""The lease renewer's bookkeeping (sandpod._lease): which handles are due, and that a
handle dropped without closing stops being renewed."""

from __future__ import annotations

import gc
from dataclasses import dataclass, field

import pytest

from sandpod import _lease
from sandpod._models import SandboxInfo


@dataclass(eq=False)
class FakeHandle:
    name: str
    lease: float
    namespace: str = "default"
    info: SandboxInfo = field(init=False)

    def __post_init__(self) -> None:
        self.info = SandboxInfo(name=self.name, namespace=self.namespace, lease=self.lease)


def test_renew_every_is_a_quarter_with_a_floor() -> None:
    assert _lease.renew_every(30.0) == 7.5
    assert _lease.renew_every(1.0) == _lease.MIN_INTERVAL


def test_table_renews_due_leases_and_forgets_dropped_handles() -> None:
    table = _lease._Table()
    leased, other = FakeHandle("a", 8.0), FakeHandle("b", 40.0)
    assert table.add(leased) and table.add(other)
    assert not table.add(FakeHandle("c", 0.0)), "a handle without a lease is not renewed"
    start = min(e.due for e in table.entries.values()) - 2.0  # one every 2 s, one every 10 s
    assert table.due(start) == []
    assert [h.name for _, h in table.due(start + 2.0)] == ["a"]
    assert table.wait(start + 2.0) == pytest.approx(2.0)  # the next renewal of "a"
    table.drop(leased)
    assert list(table.entries) == [("default", "b")]
    del other
    gc.collect()
    assert table.due(start + 100.0) == []
    assert table.entries == {}, "a garbage-collected handle lets its lease run out"
