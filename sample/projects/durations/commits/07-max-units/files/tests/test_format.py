import pytest

from durations import format_duration, parse_duration


@pytest.mark.parametrize(
    "seconds, expected",
    [(0, "0s"), (45, "45s"), (60, "1m"), (5400, "1h30m"), (93784, "1d2h3m4s"), (172800, "2d")],
)
def test_format(seconds, expected):
    assert format_duration(seconds) == expected


@pytest.mark.parametrize("text", ["1s", "59m", "1h1s", "3d4h", "1d2h3m4s"])
def test_round_trip(text):
    assert format_duration(parse_duration(text)) == text


def test_max_units():
    assert format_duration(93784, max_units=2) == "1d2h"
    assert format_duration(93784, max_units=1) == "1d"
    assert format_duration(45, max_units=3) == "45s"
