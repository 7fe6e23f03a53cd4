#!/usr/bin/env python3
"""Precision and recall of the filter per part of the gold set, at the recorded threshold.

The parts were written at different times and read differently while the rules were made (see
README.md): g001-g145 tidy, g146-g225 real-traffic style, g226-g285 blind then used to shape the
rules, g286-g345 blind and scored once. `curate gold` prints the splits; this prints the parts.

    target/release/curate gold pipelines/ccrab.yaml --scores /tmp/scores.jsonl
    python3 gold/parts.py /tmp/scores.jsonl
"""
import json
import pathlib
import sys

PARTS = [
    ("g001-g145, tidy", 1, 145),
    ("g146-g225, real-traffic style", 146, 225),
    ("g226-g285, blind, then used for the rules", 226, 285),
    ("g286-g345, blind, scored once", 286, 345),
]


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    here = pathlib.Path(__file__).parent
    threshold = json.loads((here / "filter.calibration.json").read_text())["threshold"]
    scores = [json.loads(line) for line in pathlib.Path(sys.argv[1]).read_text().splitlines()]
    print(f"keep threshold {threshold:.4f} (gold/filter.calibration.json)\n")
    print("| part | split | n | kept | TP | FP | FN | precision | recall |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, lo, hi in PARTS:
        for split in ("tune", "heldout"):
            rows = [s for s in scores if lo <= int(s["id"][1:]) <= hi and s["split"] == split]
            if not rows:
                continue
            kept = [s for s in rows if s["confidence"] >= threshold]
            tp = sum(s["gold_keep"] for s in kept)
            fp = len(kept) - tp
            fn = sum(s["gold_keep"] for s in rows) - tp
            precision = f"{tp / len(kept):.3f}" if kept else "-"
            recall = f"{tp / (tp + fn):.3f}" if tp + fn else "-"
            print(f"| {name} | {split} | {len(rows)} | {len(kept)} | {tp} | {fp} | {fn} | {precision} | {recall} |")


if __name__ == "__main__":
    main()
