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


def test_fractions_are_rounded_not_truncated():
    # 4.1 * 60 is 245.99999999999997 in binary floating point
    assert parse_duration("4.1m") == 246
    assert parse_duration("0.7d") == 60480
    assert parse_duration("1.5h30.5m") == 7230


@pytest.mark.parametrize("text", ["", "   ", "h", "10", "1x", "1h 30m", "-5s"])
def test_rejects_malformed(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("text", ["1.2.3h", ".h", "1.h", "..5m"])
def test_rejects_malformed_numbers(text):
    with pytest.raises(ValueError, match="malformed duration"):
        parse_duration(text)
