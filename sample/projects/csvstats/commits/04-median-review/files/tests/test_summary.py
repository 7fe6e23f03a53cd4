import pytest

from csvstats import Summary, median, summarize


def rows(*values):
    return [{"amount": v} for v in values]


def test_summarize():
    assert summarize(rows("4.5", "10", "20"), "amount") == Summary(
        count=3, minimum=4.5, maximum=20.0, mean=11.5, median=10.0
    )


def test_single_row():
    assert summarize(rows("7"), "amount") == Summary(1, 7.0, 7.0, 7.0, 7.0)


def test_no_rows():
    with pytest.raises(ValueError):
        summarize([], "amount")


def test_not_a_number():
    with pytest.raises(ValueError):
        summarize(rows("1", "n/a"), "amount")


def test_missing_column():
    with pytest.raises(KeyError):
        summarize(rows("1"), "price")


def test_median_odd():
    assert median([3.0, 1.0, 2.0]) == 2.0


def test_empty_cells_are_skipped():
    assert summarize(rows("1", "", "3"), "amount") == Summary(2, 1.0, 3.0, 2.0, 2.0)


def test_median_even():
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5


def test_median_empty():
    with pytest.raises(ValueError):
        median([])


def test_blank_and_missing_cells_are_skipped():
    data = [{"amount": "  "}, {"amount": None}, {"amount": " 5 "}]
    assert summarize(data, "amount") == Summary(1, 5.0, 5.0, 5.0, 5.0)
