"""Probes for curate-sample/csvstats#4; test_cN checks review comment N."""

import pytest


def test_c1_median_of_even_count():
    from csvstats import median

    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5


def test_c2_median_of_nothing_is_value_error():
    from csvstats import median

    with pytest.raises(ValueError):
        median([])


def test_c3_blank_and_missing_cells_skipped():
    from csvstats import summarize

    result = summarize([{"amount": "  "}, {"amount": None}, {"amount": "5"}], "amount")
    assert result.count == 1


def test_c4_median_in_summary_of_two_values():
    from csvstats import summarize

    rows = [{"amount": "1"}, {"amount": ""}, {"amount": "3"}]
    assert summarize(rows, "amount").median == 2.0
