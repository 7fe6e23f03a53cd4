"""Probes for curate-sample/durations#8; test_cN checks review comment N."""

import pytest


def test_c1_negative_seconds_rejected():
    from durations import format_duration

    with pytest.raises(ValueError):
        format_duration(-5)


@pytest.mark.parametrize("max_units", [0, -1])
def test_c2_max_units_below_one_rejected(max_units):
    from durations import format_duration

    with pytest.raises(ValueError):
        format_duration(93784, max_units=max_units)


def test_c3_max_units_is_keyword_only():
    from durations import format_duration

    with pytest.raises(TypeError):
        format_duration(93784, 2)


def test_c4_docstring_describes_max_units():
    from durations import format_duration

    assert "max_units" in (format_duration.__doc__ or "")
