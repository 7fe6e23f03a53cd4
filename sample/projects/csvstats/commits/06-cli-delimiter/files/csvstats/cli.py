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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="csvstats", description="Summarize a numeric column of a CSV file."
    )
    parser.add_argument("path", help="CSV file with a header row")
    parser.add_argument("column", help="name of the column to summarize")
    parser.add_argument("-d", "--delimiter", default=",", help="field separator (default: ',')")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with open(args.path, newline="", encoding="utf-8") as fh:
        summary = summarize(csv.DictReader(fh, delimiter=args.delimiter), args.column)
    print(format_summary(summary))
    return 0
