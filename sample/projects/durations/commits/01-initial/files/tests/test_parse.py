import pytest

from durations import parse_duration


def test_single_units():
    assert parse_duration("45s") == 45
    assert parse_duration("2m") == 120
    assert parse_duration("3h") == 10800
    assert parse_duration("1d") == 86400


def test_combined_units():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("1d2h3m4s") == 93784


def test_case_and_whitespace():
    assert parse_duration("  1H30M ") == 5400


@pytest.mark.parametrize("text", ["", "   ", "h", "10", "1x", "1h 30m", "-5s"])
def test_rejects_malformed(text):
    with pytest.raises(ValueError):
        parse_duration(text)
