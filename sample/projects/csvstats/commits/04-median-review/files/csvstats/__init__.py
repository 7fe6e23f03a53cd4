"""Summary statistics for a numeric column of a CSV file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

__all__ = ["Summary", "median", "summarize"]


@dataclass(frozen=True)
class Summary:
    """Statistics for one column."""

    count: int
    minimum: float
    maximum: float
    mean: float
    median: float


def median(values: Iterable[float]) -> float:
    """Return the median of ``values``.

    For an even number of values this is the mean of the two middle ones.
    Raises ValueError if ``values`` is empty.
    """
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median of an empty sequence")
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def summarize(rows: Iterable[Mapping[str, Optional[str]]], column: str) -> Summary:
    """Summarize the numbers in ``column`` across ``rows``.

    ``rows`` is usually a :class:`csv.DictReader`.  Empty or blank
    cells, and cells missing from short rows, count as missing values and
    are skipped.
    Raises KeyError if the column does not exist, and ValueError if a cell
    is not a number or there are no values.
    """
    values = []
    for row in rows:
        cell = row[column]
        if cell is None or not cell.strip():
            continue
        values.append(float(cell))
    if not values:
        raise ValueError(f"no values in column {column!r}")
    return Summary(
        count=len(values),
        minimum=min(values),
        maximum=max(values),
        mean=sum(values) / len(values),
        median=median(values),
    )
