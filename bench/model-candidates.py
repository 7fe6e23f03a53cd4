#!/usr/bin/env python3
"""How the model's own test candidates of a curation state ended: per (result, verdict on the
fixed side), and the exception a test raised on the fixed side before any check. Candidates are
counted once per (comment, code, result), so a state resumed under another configuration does not
count a replayed answer twice.

Usage: python3 bench/model-candidates.py STATE_DIR   (e.g. target/bench-real-curation)
"""
import collections
import json
import re
import sqlite3
import sys

db = sqlite3.connect(f"{sys.argv[1]}/state.db")
seen = set()
ends = collections.Counter()
raised = collections.Counter()
for item, out in db.execute("SELECT item, output FROM tasks WHERE stage = 'tests' AND output IS NOT NULL"):
    for h in json.loads(out).get("history", []):
        if h.get("written_by") or "code" not in h:
            continue
        key = (item, h["code"], h.get("result"))
        if key in seen:
            continue
        seen.add(key)
        fixed = h.get("fixed", {})
        ends[(h.get("result"), fixed.get("verdict"))] += 1
        if fixed.get("verdict") == "unexpected_exception":
            names = re.findall(r"^E\s+(\w+)\b", fixed.get("output", ""), re.M)
            raised[names[0] if names else "?"] += 1
print(f"{len(seen)} distinct model candidates")
for (result, verdict), n in ends.most_common():
    print(f"{n:4}  {result}  (fixed side: {verdict})")
print("raised on the fixed side:", ", ".join(f"{k} {v}" for k, v in raised.most_common()))
