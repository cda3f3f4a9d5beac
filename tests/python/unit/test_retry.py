import random

import grpc
import pytest

from sandpod import RetryPolicy
from sandpod._retry import RetryState, is_retryable

C = grpc.StatusCode


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("code", "idempotent", "backpressure", "want"),
    [
        (C.UNAVAILABLE, False, False, True),
        (C.ABORTED, False, False, True),
        (C.DEADLINE_EXCEEDED, True, False, True),
        (C.DEADLINE_EXCEEDED, False, False, False),
        (C.NOT_FOUND, True, False, False),
        (C.INVALID_ARGUMENT, True, False, False),
        (C.INTERNAL, True, False, False),
        (C.UNAUTHENTICATED, True, False, False),
        (None, True, False, False),
        # RESOURCE_EXHAUSTED: back-pressure of creates and claims only; from a file
        # call (an agent's limit, a message over the size limit) it is final.
        (C.RESOURCE_EXHAUSTED, True, True, True),
        (C.RESOURCE_EXHAUSTED, True, False, False),
        (C.RESOURCE_EXHAUSTED, False, False, False),
    ],
)
def test_is_retryable(code, idempotent, backpressure, want):
    assert is_retryable(code, idempotent=idempotent, backpressure=backpressure) is want


def test_resource_exhausted_is_retried_only_with_backpressure():
    for backpressure, want in ((True, True), (False, False)):
        state = RetryState(RetryPolicy(), 60.0, idempotent=True, backpressure=backpressure)
        state.attempt_timeout()
        assert (state.next_delay(C.RESOURCE_EXHAUSTED) is not None) is want


def test_backoff_cap_grows_exponentially_and_is_bounded():
    p = RetryPolicy(initial_backoff=0.1, max_backoff=1.0, multiplier=2.0)
    assert [p.backoff_cap(i) for i in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert p.backoff_cap(10_000) == 1.0


def test_full_jitter_stays_within_the_cap():
    p = RetryPolicy(initial_backoff=0.1, max_backoff=1.0)
    state = RetryState(p, None, idempotent=True, rng=random.Random(7))
    delays = []
    for _ in range(50):
        state.attempt_timeout()
        delays.append((state.next_delay(C.UNAVAILABLE), p.backoff_cap(state.attempts - 1)))
    assert all(0 <= d <= cap for d, cap in delays)
    # Full jitter: the draws are spread out, not all at the cap.
    assert len({round(d, 6) for d, _ in delays}) > 40
    assert min(d / cap for d, cap in delays) < 0.2


def test_total_deadline_bounds_attempts_and_waits():
    clock = FakeClock()
    p = RetryPolicy(initial_backoff=0.5, max_backoff=4.0)
    state = RetryState(p, 10.0, idempotent=True, clock=clock, rng=random.Random(1))
    slept = 0.0
    while True:
        budget = state.attempt_timeout()
        assert budget is not None and budget <= 10.0 - slept + 1e-9
        delay = state.next_delay(C.UNAVAILABLE)
        if delay is None:
            break
        clock.now += delay
        slept += delay
        assert slept <= 10.0
    assert state.attempts > 3
    assert state.remaining() < 2 * state.min_attempt_time + 4.0


def test_never_sleeps_past_the_deadline():
    clock = FakeClock()
    p = RetryPolicy(initial_backoff=100.0, max_backoff=100.0)
    state = RetryState(p, 1.0, idempotent=True, clock=clock, rng=random.Random(3))
    state.attempt_timeout()
    delay = state.next_delay(C.UNAVAILABLE)
    assert delay is not None and delay <= 1.0 - state.min_attempt_time


def test_max_attempts():
    state = RetryState(RetryPolicy(max_attempts=3), None, idempotent=True)
    results = []
    for _ in range(4):
        state.attempt_timeout()
        results.append(state.next_delay(C.UNAVAILABLE) is not None)
    assert results == [True, True, False, False]


def test_non_retryable_gives_up_at_once():
    state = RetryState(RetryPolicy(), 60.0, idempotent=True)
    state.attempt_timeout()
    assert state.next_delay(C.INVALID_ARGUMENT) is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"initial_backoff": 0},
        {"initial_backoff": 2, "max_backoff": 1},
        {"multiplier": 0.5},
        {"max_attempts": 0},
    ],
)
def test_policy_validation(kwargs):
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)
