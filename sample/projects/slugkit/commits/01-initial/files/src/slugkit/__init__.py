"""Make URL-friendly slugs from arbitrary text."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["slugify"]

_SEPARATORS = re.compile(r"[^a-z0-9]+")


def slugify(text: str, sep: str = "-") -> str:
    """Turn ``text`` into a lowercase ASCII slug such as ``"hello-world"``.

    Accented letters are reduced to their base letter and every run of other
    characters becomes a single ``sep``.  The result never starts or ends
    with ``sep``.
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = _SEPARATORS.split(ascii_text.lower())
    return sep.join(word for word in words if word)
