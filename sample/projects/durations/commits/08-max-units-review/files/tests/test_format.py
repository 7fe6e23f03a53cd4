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


def test_negative_rejected():
    with pytest.raises(ValueError):
        format_duration(-5)


def test_max_units():
    assert format_duration(93784, max_units=2) == "1d2h"
    assert format_duration(93784, max_units=1) == "1d"
    assert format_duration(45, max_units=3) == "45s"


def test_max_units_truncates():
    assert format_duration(7199, max_units=1) == "1h"


def test_max_units_is_keyword_only():
    with pytest.raises(TypeError):
        format_duration(93784, 2)


@pytest.mark.parametrize("max_units", [0, -1])
def test_max_units_must_be_positive(max_units):
    with pytest.raises(ValueError):
        format_duration(93784, max_units=max_units)
