"""Probes for curate-sample/throttle#5; test_cN checks review comment N."""

import pytest


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_c1_wait_time_never_negative():
    from throttle import TokenBucket

    bucket = TokenBucket(rate=1, capacity=5, clock=Clock())
    assert bucket.wait_time() == 0.0


def test_c2_request_above_capacity_raises():
    from throttle import TokenBucket

    clock = Clock()
    calls = []

    def sleep(seconds):
        calls.append(seconds)
        clock.now += seconds
        if len(calls) > 3:
            raise RuntimeError("acquire keeps sleeping")

    bucket = TokenBucket(rate=1, capacity=2, clock=clock)
    with pytest.raises(ValueError):
        bucket.acquire(3, sleep=sleep)


def test_c3_acquire_timeout_returns_bool():
    from throttle import TokenBucket

    bucket = TokenBucket(rate=1, capacity=1, clock=Clock())
    assert bucket.acquire() is True
    assert bucket.acquire(1, timeout=0) is False
