"""Make URL-friendly slugs from arbitrary text."""

from __future__ import annotations

import re
import unicodedata
from typing import Container

__all__ = ["slugify", "unique_slug"]

_SEPARATORS = re.compile(r"[^a-z0-9]+")

# Letters that NFKD does not split into an ASCII base letter plus accents.
_EXTRA = {"ß": "ss", "æ": "ae", "ø": "o", "œ": "oe", "đ": "d", "ł": "l", "þ": "th"}


def _transliterate(text: str) -> str:
    for char, replacement in _EXTRA.items():
        text = text.replace(char, replacement)
    return text


def slugify(text: str, sep: str = "-", max_length: int | None = None) -> str:
    """Turn ``text`` into a lowercase ASCII slug such as ``"hello-world"``.

    Accented letters are reduced to their base letter, letters such as ``ß``
    or ``ø`` are spelled out (``ss``, ``o``), and every run of other
    characters becomes a single ``sep``.  The result never starts or ends
    with ``sep``.

    If ``max_length`` is given, the slug is cut to at most that many
    characters (possibly in the middle of a word) and a separator left
    dangling at the end is removed.  Raises ValueError if ``max_length`` is
    less than 1.
    """
    if max_length is not None and max_length < 1:
        raise ValueError(f"max_length must be at least 1, got {max_length}")
    text = _transliterate(text)
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = _SEPARATORS.split(ascii_text.lower())
    slug = sep.join(word for word in words if word)
    if max_length is not None:
        slug = slug[:max_length].rstrip(sep)
    return slug


def unique_slug(text: str, taken: Container[str], sep: str = "-") -> str:
    """Return ``slugify(text)``, adding ``-2``, ``-3``, ... until it is not in ``taken``.

    Raises ValueError if ``text`` has no characters that survive slugify.
    """
    base = slugify(text, sep)
    if not base:
        raise ValueError(f"cannot make a slug from {text!r}")
    slug, number = base, 1
    while slug in taken:
        number += 1
        slug = f"{base}{sep}{number}"
    return slug
