"""Parse and compare semantic version strings (``MAJOR.MINOR.PATCH[-PRERELEASE]``)."""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Version", "parse", "compare", "is_valid", "bump"]

_NUMBER = r"0|[1-9]\d*"
_IDENTIFIER = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
_VERSION = re.compile(
    rf"({_NUMBER})\.({_NUMBER})\.({_NUMBER})"
    rf"(?:-({_IDENTIFIER}(?:\.{_IDENTIFIER})*))?"
)


class Version(NamedTuple):
    """A parsed version; instances compare by semver precedence."""

    major: int
    minor: int
    patch: int
    prerelease: str = ""

    def __str__(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return f"{core}-{self.prerelease}" if self.prerelease else core

    def sort_key(self) -> tuple:
        """A key that orders versions by precedence (semver.org, item 11).

        A release ranks above its pre-releases; pre-release identifiers are
        compared one by one, numbers numerically and below any text.
        """
        if not self.prerelease:
            return (self.major, self.minor, self.patch, 1, ())
        identifiers = tuple(
            (0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in self.prerelease.split(".")
        )
        return (self.major, self.minor, self.patch, 0, identifiers)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.sort_key() <= other.sort_key()

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.sort_key() > other.sort_key()

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.sort_key() >= other.sort_key()


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


def bump(version: str | Version, part: str) -> str | Version:
    """Return the next ``part`` version after ``version``.

    ``part`` is ``"major"``, ``"minor"`` or ``"patch"``; anything else raises
    ValueError.  ``version`` may be a string or a :class:`Version` and the
    result has the same type.  Like npm's semver, a pre-release moves to its
    own release when that is the next version of the requested kind:
    ``bump("1.2.3-rc.1", "patch")`` is ``"1.2.3"`` and
    ``bump("2.0.0-beta", "major")`` is ``"2.0.0"``.
    """
    v = version if isinstance(version, Version) else parse(version)
    if part == "major":
        releases_major = bool(v.prerelease) and v.minor == 0 and v.patch == 0
        new = Version(v.major if releases_major else v.major + 1, 0, 0)
    elif part == "minor":
        releases_minor = bool(v.prerelease) and v.patch == 0
        new = Version(v.major, v.minor if releases_minor else v.minor + 1, 0)
    elif part == "patch":
        new = Version(v.major, v.minor, v.patch if v.prerelease else v.patch + 1)
    else:
        raise ValueError(f"part must be 'major', 'minor' or 'patch', not {part!r}")
    return new if isinstance(version, Version) else str(new)
