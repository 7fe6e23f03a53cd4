import pytest

from csvstats import Summary, summarize


def rows(*values):
    return [{"amount": v} for v in values]


def test_summarize():
    assert summarize(rows("4.5", "10", "20"), "amount") == Summary(
        count=3, minimum=4.5, maximum=20.0, mean=11.5
    )


def test_single_row():
    assert summarize(rows("7"), "amount") == Summary(1, 7.0, 7.0, 7.0)


def test_no_rows():
    with pytest.raises(ValueError):
        summarize([], "amount")


def test_not_a_number():
    with pytest.raises(ValueError):
        summarize(rows("1", "n/a"), "amount")


def test_missing_column():
    with pytest.raises(KeyError):
        summarize(rows("1"), "price")
