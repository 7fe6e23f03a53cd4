"""Parse compact duration strings such as ``1h30m`` or ``45s``."""

from __future__ import annotations

import re

__all__ = ["parse_duration"]

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_TOKEN = re.compile(r"(\d+)([dhms])")
_WHOLE = re.compile(r"(?:\d+[dhms])+")


def parse_duration(text: str) -> int:
    """Return the number of seconds in a duration such as ``"1h30m"``.

    Units are ``d``, ``h``, ``m`` and ``s``.  They may come in any order and
    in either case; surrounding whitespace is ignored.

    Raises ValueError if the text is empty or malformed.
    """
    text = text.strip().lower()
    if not text:
        raise ValueError("empty duration")
    if not _WHOLE.fullmatch(text):
        raise ValueError(f"malformed duration: {text!r}")
    return sum(int(number) * _UNITS[unit] for number, unit in _TOKEN.findall(text))
