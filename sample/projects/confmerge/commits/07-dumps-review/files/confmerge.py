"""Parse small INI-style configuration files and merge layered configs."""

from __future__ import annotations

import os

__all__ = ["ConfigError", "parse", "merge", "merge_files", "dumps"]


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


def merge_files(
    *paths: str | os.PathLike, missing_ok: bool = False
) -> dict[str, dict[str, str]]:
    """Read, parse and merge the files in ``paths``; later files win.

    Files are decoded as UTF-8 and a leading byte order mark is ignored.
    With ``missing_ok=True`` paths that do not exist are skipped, which suits
    optional layers such as a per-user override file; otherwise a missing
    file raises FileNotFoundError.
    """
    layers = []
    for path in paths:
        try:
            with open(path, encoding="utf-8-sig") as fh:
                text = fh.read()
        except FileNotFoundError:
            if missing_ok:
                continue
            raise
        layers.append(parse(text))
    return merge(*layers)


def dumps(config: dict[str, dict[str, str]]) -> str:
    """Serialize a parsed config back to INI-style text.

    Keys of the ``""`` section come first, without a header.  The other
    sections follow in insertion order, separated by blank lines, and the
    text ends with a newline.  ``parse(dumps(config)) == config`` holds for
    anything ``parse`` returns; comments and formatting are not preserved.
    """
    blocks = []
    if config.get(""):
        blocks.append([f"{key} = {value}" for key, value in config[""].items()])
    for section, values in config.items():
        if section == "":
            continue
        lines = [f"[{section}]"]
        lines.extend(f"{key} = {value}" for key, value in values.items())
        blocks.append(lines)
    return "\n".join("\n".join(lines) + "\n" for lines in blocks)
