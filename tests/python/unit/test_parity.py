"""The sync and asyncio twins keep the same surface, parameter for parameter."""

import inspect

import pytest

import sandpod

PAIRS = [
    (sandpod.Client, sandpod.AsyncClient),
    (sandpod.Sandbox, sandpod.AsyncSandbox),
    (sandpod.Files, sandpod.AsyncFiles),
    (sandpod.Process, sandpod.AsyncProcess),
    (sandpod.Watch, sandpod.AsyncWatch),
    (sandpod.Terminal, sandpod.AsyncTerminal),
    (sandpod.FileWatch, sandpod.AsyncFileWatch),
    (sandpod.CodeContext, sandpod.AsyncCodeContext),
    (sandpod.Snapshot, sandpod.AsyncSnapshot),
]
# Dunder methods that differ by design (with vs async with, for vs async for).
SYNC_ONLY = {"__enter__", "__exit__", "__iter__", "__next__"}
ASYNC_ONLY = {"__aenter__", "__aexit__", "__aiter__", "__anext__"}


def public_members(cls):
    return {
        name: member
        for name, member in inspect.getmembers(cls)
        if (not name.startswith("_") or name in SYNC_ONLY | ASYNC_ONLY)
        and (inspect.isfunction(member) or isinstance(member, property))
    }


def params(fn):
    return [(p.name, p.kind, repr(p.default)) for p in inspect.signature(fn).parameters.values()][
        1:
    ]  # without self


@pytest.mark.parametrize(("sync_cls", "async_cls"), PAIRS, ids=lambda c: c.__name__)
def test_same_members(sync_cls, async_cls):
    sync = set(public_members(sync_cls)) - SYNC_ONLY
    asyn = set(public_members(async_cls)) - ASYNC_ONLY
    assert sync == asyn


@pytest.mark.parametrize(("sync_cls", "async_cls"), PAIRS, ids=lambda c: c.__name__)
def test_same_signatures(sync_cls, async_cls):
    sync = public_members(sync_cls)
    asyn = public_members(async_cls)
    for name in (set(sync) - SYNC_ONLY) & set(asyn):
        s, a = sync[name], asyn[name]
        if isinstance(s, property):
            assert isinstance(a, property), name
            continue
        assert params(s) == params(a), name


@pytest.mark.parametrize(("sync_cls", "async_cls"), PAIRS, ids=lambda c: c.__name__)
def test_async_methods_are_coroutines_where_sync_ones_do_io(sync_cls, async_cls):
    # Everything the sync side does over the network is awaitable (or an async
    # iterator) on the async side; plain helpers stay plain.
    plain = {"claim_many", "watch"}  # return async iterators at once
    for name, member in public_members(async_cls).items():
        if isinstance(member, property) or name.startswith("__") or name in plain:
            continue
        if async_cls in (sandpod.AsyncWatch, sandpod.AsyncFileWatch) and name == "close":
            continue
        assert inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member), name
