"""Rate limiting per key, for example per client address."""

from __future__ import annotations

import time
from typing import Callable, Dict, Hashable

from .bucket import TokenBucket


class KeyedLimiter:
    """Keep one :class:`TokenBucket` per key, all with the same rate and capacity."""

    def __init__(
        self, rate: float, capacity: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.capacity = capacity
        self._clock = clock
        self._buckets: Dict[Hashable, TokenBucket] = {}

    def __len__(self) -> int:
        return len(self._buckets)

    def try_acquire(self, key: Hashable, n: float = 1) -> bool:
        """Take ``n`` tokens from the bucket for ``key``."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(self.rate, self.capacity, self._clock)
            self._buckets[key] = bucket
        return bucket.try_acquire(n)
