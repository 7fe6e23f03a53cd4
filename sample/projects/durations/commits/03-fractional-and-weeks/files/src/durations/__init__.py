"""Parse and format compact duration strings such as ``1h30m`` or ``45s``."""

from __future__ import annotations

import re

__all__ = ["parse_duration", "format_duration"]

_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_TOKEN = re.compile(r"([\d.]+)([wdhms])")
_WHOLE = re.compile(r"(?:[\d.]+[wdhms])+")


def parse_duration(text: str) -> int:
    """Return the number of seconds in a duration such as ``"1h30m"``.

    Units are ``d``, ``h``, ``m`` and ``s``.  They may come in any order and
    in either case; surrounding whitespace is ignored.  Numbers may be
    fractional, e.g. ``"1.5h"``.

    Raises ValueError if the text is empty or malformed.
    """
    text = text.strip().lower()
    if not text:
        raise ValueError("empty duration")
    if not _WHOLE.fullmatch(text):
        raise ValueError(f"malformed duration: {text!r}")
    return sum(
        int(float(number) * _UNITS[unit]) for number, unit in _TOKEN.findall(text)
    )


def format_duration(seconds: int) -> str:
    """Format a number of seconds as a compact duration, largest unit first.

    ``format_duration(5400)`` returns ``"1h30m"`` and ``format_duration(0)``
    returns ``"0s"``.  Raises ValueError for negative input.
    """
    if seconds < 0:
        raise ValueError("negative duration")
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in _UNITS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
