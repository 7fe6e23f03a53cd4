#!/usr/bin/env python3
"""Other ways to read the filter model's first answer (issue 27): precision and recall of the
probability of the `defect` kind alone, and of `defect` against `change`, beside the stage's own
confidence (the probability of a kept kind), at a few thresholds.

It reads what `curate gold PIPELINE --gold ROWS.jsonl --scores SCORES.jsonl` left: the scores file
(which rows a rule decided, and the confidence of the others) and the recorded answers in
`cache/llm` (the log-probabilities of the token after `"kind": "`). Rows a rule decided, or whose
answer is not in the cache, count as dropped by every reading.

Usage: python3 bench/kind-probabilities.py ROWS.jsonl SCORES.jsonl [CACHE_DIR]   (run it after
`curate gold` from the same directory; CACHE_DIR defaults to cache/llm). Real rows stay outside
the repository.
"""
import glob
import json
import math
import sys

KINDS = ["defect", "change", "question", "vague", "style", "praise", "process"]
THRESHOLDS = [0.3, 0.5, 0.7, 0.8, 0.885, 0.95]


def kind_distribution(logprobs):
    """The probability of each kind at the token after `"kind": "`, from its top alternatives."""
    for i, token in enumerate(logprobs):
        if token["token"] in (' "', '"') and i >= 2 and "kind" in logprobs[i - 2]["token"] and i + 1 < len(logprobs):
            dist = {}
            for text, logprob in logprobs[i + 1]["top"]:
                text = (text or "").strip()
                kind = next((k for k in KINDS if text and k.startswith(text)), None)
                if kind:
                    dist[kind] = dist.get(kind, 0.0) + math.exp(logprob)
            return dist
    return None


def first_answers(cache_dir):
    """The filter's first answer's kind distribution, by the comment text it was asked about."""
    by_comment = {}
    for path in glob.glob(f"{cache_dir}/*/*.json"):
        try:
            entry = json.load(open(path))
        except (OSError, ValueError):
            continue
        messages = entry["request"]["messages"]
        if len(messages) != 2 or "Review comment:\n" not in messages[-1]["content"]:
            continue
        comment = messages[-1]["content"].split("Review comment:\n", 1)[1].strip()
        by_comment[comment] = kind_distribution(entry["answer"].get("logprobs") or [])
    return by_comment


def figures(scored, threshold):
    tp = sum(1 for s, keep in scored if s >= threshold and keep)
    fp = sum(1 for s, keep in scored if s >= threshold and not keep)
    fn = sum(1 for s, keep in scored if s < threshold and keep)
    return (tp / (tp + fp) if tp + fp else 0.0), (tp / (tp + fn) if tp + fn else 0.0)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    scores = {s["id"]: s for s in (json.loads(line) for line in open(sys.argv[2]) if line.strip())}
    answers = first_answers(sys.argv[3] if len(sys.argv) > 3 else "cache/llm")
    readings = {"confidence": [], "defect": [], "defect vs change": []}
    for row in rows:
        score, keep = scores[row["id"]], row["label"] == "keep"
        dist = answers.get(row["comment"].strip())
        if score["reason"].startswith("rule") or not dist:
            for scored in readings.values():
                scored.append((-1.0, keep))
            continue
        total = sum(dist.values()) or 1.0
        defect, change = dist.get("defect", 0.0), dist.get("change", 0.0)
        readings["confidence"].append((score["confidence"] or 0.0, keep))
        readings["defect"].append((defect / total, keep))
        readings["defect vs change"].append((defect / (defect + change) if defect + change else 0.0, keep))
    print("| reading | " + " | ".join(f"P / R at {t}" for t in THRESHOLDS) + " |")
    print("|---|" + "---:|" * len(THRESHOLDS))
    for name, scored in readings.items():
        cells = " | ".join("%.2f / %.2f" % figures(scored, t) for t in THRESHOLDS)
        print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
