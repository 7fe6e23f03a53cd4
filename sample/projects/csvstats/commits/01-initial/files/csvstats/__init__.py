"""Summary statistics for a numeric column of a CSV file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

__all__ = ["Summary", "summarize"]


@dataclass(frozen=True)
class Summary:
    """Statistics for one column."""

    count: int
    minimum: float
    maximum: float
    mean: float


def summarize(rows: Iterable[Mapping[str, Optional[str]]], column: str) -> Summary:
    """Summarize the numbers in ``column`` across ``rows``.

    ``rows`` is usually a :class:`csv.DictReader`.  Raises KeyError if the
    column does not exist, and ValueError if a cell is not a number or
    there are no rows.
    """
    values = [float(row[column]) for row in rows]
    if not values:
        raise ValueError(f"no values in column {column!r}")
    return Summary(
        count=len(values),
        minimum=min(values),
        maximum=max(values),
        mean=sum(values) / len(values),
    )
