#!/usr/bin/env python3
"""Precision and recall of the review filter at chosen thresholds, and the best precision reached at
each recall level when the threshold walks down the confidences (issue 27), from the scores file
that `curate gold PIPELINE --gold ROWS.jsonl --scores SCORES.jsonl` writes. Rows a rule decided
(confidence 0) count as dropped at every threshold. Used for the eighth real-traffic set's figures
in docs/benchmarks.md (the rows themselves stay outside the repository).

Usage: python3 bench/filter-scores.py SCORES.jsonl [THRESHOLD ...]   (default 0.5 0.8 0.8846 0.95)
"""
import json
import sys


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    keeps = sum(r["gold_keep"] for r in rows)
    if not keeps:
        sys.exit("no kept row in the scores file")
    print(f"{len(rows)} rows, {keeps} keep")
    for t in [float(x) for x in sys.argv[2:]] or [0.5, 0.8, 0.8846, 0.95]:
        tp = sum(1 for r in rows if r["confidence"] >= t and r["gold_keep"])
        fp = sum(1 for r in rows if r["confidence"] >= t and not r["gold_keep"])
        precision = tp / (tp + fp) if tp + fp else 0.0
        print(f"threshold {t:.4f}: TP {tp} FP {fp} FN {keeps - tp}  precision {precision:.3f} recall {tp / keeps:.3f}")
    judged = sorted((r for r in rows if r["confidence"] > 0), key=lambda r: -r["confidence"])
    tp = fp = 0
    at_recall = {}
    for r in judged:
        tp += r["gold_keep"]
        fp += not r["gold_keep"]
        for level in (0.3, 0.4, 0.5, 0.6, 0.7):
            if tp / keeps >= level and level not in at_recall:
                at_recall[level] = tp / (tp + fp)
    print("precision at recall:", ", ".join(f"{k}: {v:.3f}" for k, v in sorted(at_recall.items())))
    print(f"rows the model judged: {len(judged)}, the most recall they allow: {sum(r['gold_keep'] for r in judged) / keeps:.3f}")


if __name__ == "__main__":
    main()
