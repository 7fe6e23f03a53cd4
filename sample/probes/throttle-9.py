"""Probes for curate-sample/throttle#9; test_cN checks review comment N."""

import pytest


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.mark.parametrize("rate, capacity", [(0, 1), (1, 0)])
def test_c1_bad_settings_fail_at_construction(rate, capacity):
    from throttle import KeyedLimiter

    with pytest.raises(ValueError):
        KeyedLimiter(rate=rate, capacity=capacity)


def test_c2_idle_keys_can_be_pruned():
    from throttle import KeyedLimiter

    clock = Clock()
    limiter = KeyedLimiter(rate=1, capacity=1, clock=clock)
    for key in range(100):
        limiter.try_acquire(key)
    clock.now += 5
    limiter.prune()
    assert len(limiter) == 0


def test_c3_tokens_keyword():
    from throttle import KeyedLimiter

    limiter = KeyedLimiter(rate=1, capacity=2, clock=Clock())
    assert limiter.try_acquire("a", tokens=2)
    assert not limiter.try_acquire("a", tokens=1)
