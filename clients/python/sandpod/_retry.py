"""Retry policy: which failures are retried, and how long to wait between attempts.

Pure logic (no I/O): the sync and asyncio clients drive the same :class:`RetryState`,
each with its own sleep.

Rules:

* UNAVAILABLE and ABORTED are transient and retried.
* RESOURCE_EXHAUSTED is retried only for creates and claims, where it is the server's
  back-pressure (a burst, a quota that frees up). Anywhere else, and above all from a
  sandbox's agent (files), it is a limit a repeat would hit again (a message over the
  size limit, a full disk): it is raised at once, with the server's message.
* DEADLINE_EXCEEDED is retried only for idempotent calls (gets, lists, and creates or
  claims, which carry a request id), and only while the call's total deadline allows.
* Exec and WriteFile are never retried: they are not passed through a RetryState.
* Waits follow exponential backoff with full jitter (a uniform draw between 0 and the
  capped exponential), and never go past the call's total deadline.
* Retries are for a server that restarts under a client that was connected. Before the
  client has reached its server once, the clients wait at most ``connect_timeout`` for
  the connection instead, then raise Unavailable naming the address (``_await_server``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

__all__ = ["BACKPRESSURE_CODES", "TRANSIENT_CODES", "RetryPolicy", "RetryState", "is_retryable"]

#: Codes retried for every call that is retried at all.
TRANSIENT_CODES: frozenset[grpc.StatusCode] = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.ABORTED,
    }
)

#: Codes retried only for calls whose server answers a burst with them (creates and
#: claims).
BACKPRESSURE_CODES: frozenset[grpc.StatusCode] = frozenset({grpc.StatusCode.RESOURCE_EXHAUSTED})


def is_retryable(
    code: grpc.StatusCode | None, *, idempotent: bool, backpressure: bool = False
) -> bool:
    """Whether a failed attempt with ``code`` may be tried again. ``backpressure``: the
    call is a create or claim, whose RESOURCE_EXHAUSTED is worth waiting out."""
    if code in TRANSIENT_CODES:
        return True
    if code in BACKPRESSURE_CODES:
        return backpressure
    return idempotent and code == grpc.StatusCode.DEADLINE_EXCEEDED


@dataclass(frozen=True)
class RetryPolicy:
    """How the client retries transient failures.

    Args:
        initial_backoff: the cap of the first wait, in seconds.
        max_backoff: the largest cap of any wait, in seconds.
        multiplier: the growth of the cap per attempt.
        max_attempts: attempts in all (first one included); ``None`` means limited only
            by the call's deadline. ``1`` turns retries off.
    """

    initial_backoff: float = 0.05
    max_backoff: float = 2.0
    multiplier: float = 2.0
    max_attempts: int | None = None

    def __post_init__(self) -> None:
        if self.initial_backoff <= 0 or self.max_backoff < self.initial_backoff:
            raise ValueError("need 0 < initial_backoff <= max_backoff")
        if self.multiplier < 1:
            raise ValueError("multiplier must be >= 1")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")

    def backoff_cap(self, retry: int) -> float:
        """The upper bound of the wait before retry number ``retry`` (0-based)."""
        return min(self.max_backoff, self.initial_backoff * self.multiplier ** min(retry, 64))


@dataclass
class RetryState:
    """The retry bookkeeping of one call.

    Args:
        policy: the retry policy.
        timeout: the call's total budget in seconds, all attempts and waits included;
            ``None`` means no deadline.
        idempotent: whether DEADLINE_EXCEEDED may be retried.
        backpressure: whether RESOURCE_EXHAUSTED may be retried (creates and claims).
    """

    policy: RetryPolicy
    timeout: float | None
    idempotent: bool
    backpressure: bool = False
    clock: Callable[[], float] = time.monotonic
    rng: random.Random = field(default_factory=random.Random)
    attempts: int = 0
    deadline: float | None = field(init=False)

    # Below this much time left, another attempt is not worth starting.
    min_attempt_time: float = 0.05

    def __post_init__(self) -> None:
        self.deadline = None if self.timeout is None else self.clock() + self.timeout

    def remaining(self) -> float | None:
        """Seconds left of the total budget (``None``: unbounded), never below zero."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - self.clock())

    def attempt_timeout(self) -> float | None:
        """The gRPC deadline to give the next attempt; counts the attempt."""
        self.attempts += 1
        return self.remaining()

    def next_delay(self, code: grpc.StatusCode | None) -> float | None:
        """How long to wait before the next attempt, or ``None`` to give up."""
        if not is_retryable(code, idempotent=self.idempotent, backpressure=self.backpressure):
            return None
        if self.policy.max_attempts is not None and self.attempts >= self.policy.max_attempts:
            return None
        delay = self.rng.uniform(0.0, self.policy.backoff_cap(self.attempts - 1))
        remaining = self.remaining()
        if remaining is None:
            return delay
        if remaining < 2 * self.min_attempt_time:
            return None
        # Never sleep past the point where one last attempt still fits.
        return min(delay, remaining - self.min_attempt_time)
