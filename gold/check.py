#!/usr/bin/env python3
"""Validate gold/filter.jsonl and print its counts.

Usage: python3 gold/check.py [path]   (exit status 1 if any check fails)
"""
import collections
import json
import re
import sys
from pathlib import Path

FIELDS = ["id", "split", "pr_title", "path", "diff_hunk", "comment", "label", "category", "justification"]
SPLITS = ("tune", "heldout")
LABELS = ("keep", "drop")
CATEGORIES = (
    "functional correctness", "testing", "robustness", "compatibility", "documentation",
    "design", "error handling", "maintainability", "efficiency", "security",
)
# minimum number of keep rows per category
MINIMUM = {c: 2 for c in CATEGORIES}
MINIMUM.update({"functional correctness": 5, "robustness": 5, "error handling": 5})
HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?: .*)?$")
BODY_LINES = (3, 12)  # lines after the @@ header


def check_hunk(hunk):
    """Problems with one diff hunk (empty if fine)."""
    lines = hunk.split("\n")
    m = HEADER.match(lines[0])
    if not m:
        return [f"bad header {lines[0]!r}"]
    old_start, old_len, new_start, new_len = (int(g) if g is not None else 1 for g in m.groups())
    body = [l for l in lines[1:] if not l.startswith("\\")]
    problems = []
    if not BODY_LINES[0] <= len(body) <= BODY_LINES[1]:
        problems.append(f"{len(body)} lines after the header, want {BODY_LINES[0]}-{BODY_LINES[1]}")
    if any(l[:1] not in (" ", "+", "-") for l in body):
        problems.append("a line without a ' ', '+' or '-' prefix")
    shown_old = sum(l[:1] in (" ", "-") for l in body)
    shown_new = sum(l[:1] in (" ", "+") for l in body)
    # the hunk is cut at the commented line, so the header may count more lines than are shown
    if shown_old > old_len:
        problems.append(f"{shown_old} old-side lines shown but the header says {old_len}")
    if shown_new > new_len:
        problems.append(f"{shown_new} new-side lines shown but the header says {new_len}")
    if (old_start == 0) != (old_len == 0) or (new_start == 0) != (new_len == 0):
        problems.append("a side starts at 0 without being empty (or the reverse)")
    if not body or body[-1][:1] not in (" ", "+", "-"):
        problems.append("no commented line")
    return problems


def main(path):
    errors = []
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"line {n}: not JSON ({e})")
            continue
        where = f"line {n} ({row.get('id')})"
        if set(row) != set(FIELDS):
            errors.append(f"{where}: fields {sorted(row)} != {sorted(FIELDS)}")
            continue
        for f in FIELDS:
            if f != "category" and not (isinstance(row[f], str) and row[f].strip()):
                errors.append(f"{where}: {f} must be a non-empty string")
        if not re.fullmatch(r"g\d{3}", row["id"]):
            errors.append(f"{where}: id should look like g001")
        if row["split"] not in SPLITS:
            errors.append(f"{where}: split {row['split']!r}")
        if row["label"] not in LABELS:
            errors.append(f"{where}: label {row['label']!r}")
        if row["label"] == "keep" and row["category"] not in CATEGORIES:
            errors.append(f"{where}: keep needs one of the ten categories, got {row['category']!r}")
        if row["label"] == "drop" and row["category"] is not None:
            errors.append(f"{where}: drop must have category null")
        if not row["justification"].rstrip().endswith("."):
            errors.append(f"{where}: justification should be one sentence ending in '.'")
        errors += [f"{where}: hunk: {p}" for p in check_hunk(row["diff_hunk"])]
        rows.append(row)

    ids = collections.Counter(r["id"] for r in rows)
    errors += [f"duplicate id {i}" for i, c in ids.items() if c > 1]
    if len(rows) < 120:
        errors.append(f"only {len(rows)} rows, want at least 120")

    by = collections.Counter((r["split"], r["label"]) for r in rows)
    cats = collections.Counter((r["split"], r["category"]) for r in rows if r["label"] == "keep")
    keep = sum(r["label"] == "keep" for r in rows)
    share = keep / len(rows) if rows else 0
    # 40% floor: the real-traffic rows (g146-g225) are mostly drop, as real review traffic is
    if not 0.40 <= share <= 0.55:
        errors.append(f"keep share {share:.1%} outside 40-55%")
    for c, lo in MINIMUM.items():
        have = cats[("tune", c)] + cats[("heldout", c)]
        if have < lo:
            errors.append(f"category {c!r}: {have} keep rows, want at least {lo}")
    held = sum(r["split"] == "heldout" for r in rows)

    langs = collections.Counter(Path(r["path"]).suffix or Path(r["path"]).name for r in rows)

    print(f"rows: {len(rows)}  (tune {len(rows) - held}, heldout {held} = {held / max(len(rows), 1):.1%})")
    print(f"keep: {keep} ({share:.1%})  drop: {len(rows) - keep}")
    print()
    print("| | tune | heldout | total |")
    print("|---|---:|---:|---:|")
    for label in LABELS:
        t, h = by[("tune", label)], by[("heldout", label)]
        print(f"| {label} | {t} | {h} | {t + h} |")
    print(f"| **all** | {len(rows) - held} | {held} | {len(rows)} |")
    print()
    print("| keep category | tune | heldout | total |")
    print("|---|---:|---:|---:|")
    for c in CATEGORIES:
        t, h = cats[("tune", c)], cats[("heldout", c)]
        print(f"| {c} | {t} | {h} | {t + h} |")
    print()
    print("file types: " + ", ".join(f"{k} {v}" for k, v in langs.most_common()))
    print()
    if errors:
        print(f"{len(errors)} problem(s):")
        for e in errors:
            print("  " + e)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    default = Path(__file__).with_name("filter.jsonl")
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else default))
