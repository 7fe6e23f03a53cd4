"""Parse and compare semantic version strings (``MAJOR.MINOR.PATCH[-PRERELEASE]``)."""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Version", "parse", "compare", "is_valid"]

_VERSION = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


class Version(NamedTuple):
    """A parsed version; instances compare in version order."""

    major: int
    minor: int
    patch: int
    prerelease: str = ""

    def __str__(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return f"{core}-{self.prerelease}" if self.prerelease else core


def parse(text: str) -> Version:
    """Parse ``"1.2.3"`` (or ``"v1.2.3"``) into ``Version(1, 2, 3)``.

    A pre-release suffix is kept: ``"1.0.0-rc.1"`` becomes
    ``Version(1, 0, 0, "rc.1")``.

    Raises ValueError if ``text`` is not a valid version.
    """
    text = text.strip()
    if text[:1] in ("v", "V"):
        text = text[1:]
    match = _VERSION.fullmatch(text)
    if match is None:
        raise ValueError(f"not a semantic version: {text!r}")
    major, minor, patch, prerelease = match.groups()
    return Version(int(major), int(minor), int(patch), prerelease or "")


def compare(a: str, b: str) -> int:
    """Return -1, 0 or 1 as version ``a`` is lower than, equal to or higher than ``b``."""
    left, right = parse(a), parse(b)
    return (left > right) - (left < right)


def is_valid(text: str) -> bool:
    """Return True if ``text`` parses as a version."""
    try:
        parse(text)
    except ValueError:
        return False
    return True
