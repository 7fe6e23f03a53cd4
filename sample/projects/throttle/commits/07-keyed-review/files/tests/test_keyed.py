import pytest

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


def test_tokens_keyword(clock):
    limiter = KeyedLimiter(rate=1, capacity=3, clock=clock)
    assert limiter.try_acquire("a", tokens=3)
    assert not limiter.try_acquire("a", tokens=1)


@pytest.mark.parametrize("rate, capacity", [(0, 1), (1, 0), (-1, 5)])
def test_bad_arguments_fail_at_construction(rate, capacity):
    with pytest.raises(ValueError):
        KeyedLimiter(rate=rate, capacity=capacity)


def test_prune_forgets_full_buckets(clock):
    limiter = KeyedLimiter(rate=1, capacity=2, clock=clock)
    limiter.try_acquire("a")
    limiter.try_acquire("b", tokens=2)
    clock.advance(1)
    assert limiter.prune() == 1
    assert len(limiter) == 1
    clock.advance(1)
    assert limiter.prune() == 1
    assert len(limiter) == 0
