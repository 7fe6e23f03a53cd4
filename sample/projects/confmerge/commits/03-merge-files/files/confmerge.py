"""Parse small INI-style configuration files and merge layered configs."""

from __future__ import annotations

import os

__all__ = ["ConfigError", "parse", "merge", "mergefiles"]


class ConfigError(ValueError):
    """Raised when configuration text cannot be parsed."""

    def __init__(self, message: str, lineno: int) -> None:
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno


def parse(text: str) -> dict[str, dict[str, str]]:
    """Parse INI-style text into ``{section: {key: value}}``.

    Keys that appear before the first ``[section]`` header belong to the
    ``""`` section.  Blank lines and lines starting with ``#`` or ``;`` are
    ignored.  Keys are lower-cased and values are stripped of surrounding
    whitespace.  Raises ConfigError on a malformed line.
    """
    config: dict[str, dict[str, str]] = {}
    section = ""
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            if not section:
                raise ConfigError("empty section name", lineno)
            config.setdefault(section, {})
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected 'key = value', got {line!r}", lineno)
        config.setdefault(section, {})[key.strip().lower()] = value.strip()
    return config


def merge(*layers: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """Merge parsed configs; later layers override earlier ones key by key.

    Sections are combined, so a later layer only needs to list the keys it
    changes.  The inputs are not modified.
    """
    result: dict[str, dict[str, str]] = {}
    for layer in layers:
        for section, values in layer.items():
            result.setdefault(section, {}).update(values)
    return result


def mergefiles(*paths: str | os.PathLike) -> dict[str, dict[str, str]]:
    """Read and parse each file in ``paths``, then merge them in order."""
    layers = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            layers.append(parse(fh.read()))
    return merge(*layers)
