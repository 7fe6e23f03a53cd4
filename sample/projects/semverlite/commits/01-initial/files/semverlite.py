"""Parse and compare semantic version strings (``MAJOR.MINOR.PATCH``)."""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Version", "parse", "compare"]

_VERSION = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


class Version(NamedTuple):
    """A parsed version; instances compare in version order."""

    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def parse(text: str) -> Version:
    """Parse ``"1.2.3"`` (or ``"v1.2.3"``) into ``Version(1, 2, 3)``.

    Raises ValueError if ``text`` is not a valid version.
    """
    text = text.strip()
    if text[:1] in ("v", "V"):
        text = text[1:]
    match = _VERSION.fullmatch(text)
    if match is None:
        raise ValueError(f"not a semantic version: {text!r}")
    return Version(*(int(group) for group in match.groups()))


def compare(a: str, b: str) -> int:
    """Return -1, 0 or 1 as version ``a`` is lower than, equal to or higher than ``b``."""
    left, right = parse(a), parse(b)
    return (left > right) - (left < right)
