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


@pytest.mark.parametrize(
    "text, expected",
    [("1.5h", 5400), ("0.5m", 30), ("2.5d", 216000), ("2w", 1209600), ("1w2d", 777600)],
)
def test_fractions_and_weeks(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "h", "10", "1x", "1h 30m", "-5s"])
def test_rejects_malformed(text):
    with pytest.raises(ValueError):
        parse_duration(text)
