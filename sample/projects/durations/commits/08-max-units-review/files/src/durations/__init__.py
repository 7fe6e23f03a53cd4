"""Parse and format compact duration strings such as ``1h30m`` or ``45s``."""

from __future__ import annotations

import re

__all__ = ["parse_duration", "format_duration"]

_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_NUMBER = r"\d+(?:\.\d+)?"
_TOKEN = re.compile(rf"({_NUMBER})([wdhms])")
_WHOLE = re.compile(rf"(?:{_NUMBER}[wdhms])+")


def parse_duration(text: str) -> int:
    """Return the number of seconds in a duration such as ``"1h30m"``.

    Units are ``w`` (weeks), ``d``, ``h``, ``m`` and ``s``.  They may come in
    any order and in either case; surrounding whitespace is ignored.  Numbers
    may be fractional, e.g. ``"1.5h"``; the total is rounded to the nearest
    whole second.

    Raises ValueError if the text is empty or malformed.
    """
    text = text.strip().lower()
    if not text:
        raise ValueError("empty duration")
    if not _WHOLE.fullmatch(text):
        raise ValueError(f"malformed duration: {text!r}")
    total = sum(float(number) * _UNITS[unit] for number, unit in _TOKEN.findall(text))
    return round(total)


def format_duration(seconds: int, *, max_units: int | None = None) -> str:
    """Format a number of seconds as a compact duration, largest unit first.

    ``format_duration(5400)`` returns ``"1h30m"`` and ``format_duration(0)``
    returns ``"0s"``.

    ``max_units`` keeps only that many of the largest non-zero units.  The
    smaller units are dropped, not rounded: ``format_duration(7199,
    max_units=1)`` is ``"1h"``.

    Raises ValueError for negative input or a ``max_units`` below 1.
    """
    if seconds < 0:
        raise ValueError("negative duration")
    if max_units is not None and max_units < 1:
        raise ValueError(f"max_units must be at least 1, got {max_units}")
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in _UNITS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    if max_units is not None:
        parts = parts[:max_units]
    return "".join(parts)
