from throttle import KeyedLimiter


def test_keys_are_limited_separately(clock):
    limiter = KeyedLimiter(rate=1, capacity=1, clock=clock)
    assert limiter.try_acquire("10.0.0.1")
    assert not limiter.try_acquire("10.0.0.1")
    assert limiter.try_acquire("10.0.0.2")
    assert len(limiter) == 2


def test_buckets_refill(clock):
    limiter = KeyedLimiter(rate=1, capacity=1, clock=clock)
    assert limiter.try_acquire("a")
    clock.advance(1)
    assert limiter.try_acquire("a")
