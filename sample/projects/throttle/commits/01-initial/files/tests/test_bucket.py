import pytest

from throttle import TokenBucket


def test_starts_full(clock):
    bucket = TokenBucket(rate=1, capacity=3, clock=clock)
    assert bucket.available == 3
    assert all(bucket.try_acquire() for _ in range(3))
    assert not bucket.try_acquire()


def test_refills_over_time(clock):
    bucket = TokenBucket(rate=2, capacity=4, clock=clock)
    assert bucket.try_acquire(4)
    clock.advance(0.5)
    assert bucket.available == 1
    assert bucket.try_acquire()
    assert not bucket.try_acquire()


def test_never_exceeds_capacity(clock):
    bucket = TokenBucket(rate=10, capacity=2, clock=clock)
    clock.advance(60)
    assert bucket.available == 2


def test_clock_going_backwards_is_ignored(clock):
    bucket = TokenBucket(rate=1, capacity=1, clock=clock)
    assert bucket.try_acquire()
    clock.advance(-5)
    assert bucket.available == 0


@pytest.mark.parametrize("rate, capacity", [(0, 1), (-1, 1), (1, 0), (1, -2)])
def test_rejects_bad_arguments(rate, capacity):
    with pytest.raises(ValueError):
        TokenBucket(rate=rate, capacity=capacity)


def test_rejects_non_positive_request(clock):
    bucket = TokenBucket(rate=1, capacity=1, clock=clock)
    with pytest.raises(ValueError):
        bucket.try_acquire(0)
