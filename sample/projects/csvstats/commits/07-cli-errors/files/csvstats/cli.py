"""Command line interface: ``csvstats FILE COLUMN``."""

from __future__ import annotations

import argparse
import csv
from dataclasses import asdict
from typing import Sequence

from . import Summary, summarize


def format_summary(summary: Summary) -> str:
    """One ``name: value`` line per statistic."""
    return "\n".join(f"{name}: {value:g}" for name, value in asdict(summary).items())


def _delimiter(value: str) -> str:
    if len(value) != 1:
        raise argparse.ArgumentTypeError(f"must be a single character, got {value!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="csvstats", description="Summarize a numeric column of a CSV file."
    )
    parser.add_argument("path", help="CSV file with a header row")
    parser.add_argument("column", help="name of the column to summarize")
    parser.add_argument(
        "-d", "--delimiter", type=_delimiter, default=",", help="field separator (default: ',')"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    with open(args.path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, delimiter=args.delimiter)
        columns = reader.fieldnames or []
        if args.column not in columns:
            parser.error(
                f"no column {args.column!r} in {args.path}; "
                f"columns are: {', '.join(columns) or '(none)'}"
            )
        summary = summarize(reader, args.column)
    print(format_summary(summary))
    return 0
