"""A token bucket rate limiter."""

from __future__ import annotations

import time
from typing import Callable


class TokenBucket:
    """Allow bursts of up to ``capacity`` operations, refilled at ``rate`` per second.

    ``clock`` returns the current time in seconds.  It defaults to
    :func:`time.monotonic` and can be replaced in tests.
    """

    def __init__(
        self, rate: float, capacity: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.rate = rate
        self.capacity = capacity
        self._clock = clock
        self._tokens = float(capacity)
        self._updated = clock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._updated)
        self._tokens = min(self.capacity, self._tokens + elapsed * self.rate)
        self._updated = now

    @property
    def available(self) -> float:
        """Number of tokens that could be taken right now."""
        self._refill()
        return self._tokens

    def try_acquire(self, tokens: float = 1) -> bool:
        """Take ``tokens`` and return True if enough are available, else return False."""
        if tokens <= 0:
            raise ValueError("tokens must be positive")
        self._refill()
        if tokens <= self._tokens:
            self._tokens -= tokens
            return True
        return False
