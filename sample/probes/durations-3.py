"""Probes for curate-sample/durations#3; test_cN checks review comment N."""

import pytest


def test_c1_fractions_are_rounded_not_truncated():
    from durations import parse_duration

    assert parse_duration("4.1m") == 246
    assert parse_duration("0.7d") == 60480


@pytest.mark.parametrize("text", ["1.2.3h", ".h", "1.h"])
def test_c2_malformed_numbers_are_rejected(text):
    from durations import parse_duration

    with pytest.raises(ValueError, match="malformed duration"):
        parse_duration(text)


def test_c3_docstring_mentions_weeks_and_rounding():
    from durations import parse_duration

    doc = parse_duration.__doc__ or ""
    assert "week" in doc
    assert "round" in doc
