"""Summary statistics for a numeric column of a CSV file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence

__all__ = ["Summary", "median", "summarize"]


@dataclass(frozen=True)
class Summary:
    """Statistics for one column."""

    count: int
    minimum: float
    maximum: float
    mean: float
    median: float


def median(values: Sequence[float]) -> float:
    """Return the middle value of ``values``."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def summarize(rows: Iterable[Mapping[str, Optional[str]]], column: str) -> Summary:
    """Summarize the numbers in ``column`` across ``rows``.

    ``rows`` is usually a :class:`csv.DictReader`.  Empty cells are
    treated as missing values and skipped.
    Raises KeyError if the column does not exist, and ValueError if a cell
    is not a number or there are no values.
    """
    values = []
    for row in rows:
        cell = row[column]
        if cell == "":
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
