"""Rate limiting per key, for example per client address."""

from __future__ import annotations

import time
from typing import Callable, Dict, Hashable

from .bucket import TokenBucket


class KeyedLimiter:
    """Keep one :class:`TokenBucket` per key, all with the same rate and capacity.

    Buckets are created on first use.  Call :meth:`prune` now and then to
    forget keys whose buckets have refilled, so memory stays bounded.
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
        self._buckets: Dict[Hashable, TokenBucket] = {}

    def __len__(self) -> int:
        return len(self._buckets)

    def try_acquire(self, key: Hashable, tokens: float = 1) -> bool:
        """Take ``tokens`` from the bucket for ``key``; see TokenBucket.try_acquire."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(self.rate, self.capacity, self._clock)
            self._buckets[key] = bucket
        return bucket.try_acquire(tokens)

    def prune(self) -> int:
        """Drop buckets that have refilled completely; return how many were dropped.

        A full bucket behaves exactly like a new one, so forgetting it does not
        change how its key is limited.
        """
        full = [key for key, bucket in self._buckets.items() if bucket.available >= self.capacity]
        for key in full:
            del self._buckets[key]
        return len(full)
