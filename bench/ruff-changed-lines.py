#!/usr/bin/env python3
"""How many ruff diagnostics fall on the lines each PR of an exported benchmark adds, for a rule set:
the figure behind docs/benchmarks.md's ruff row (and its wide-rule-set count).

Usage, from the repository root, after scripts/record-sample (which makes the export) and
scripts/review-tools (which installs ruff):
    python3 bench/ruff-changed-lines.py F,B,E7,E9 [target/record-sample/tests-bench]
"""
import json, subprocess, sys, tempfile, re, os
rules = sys.argv[1]
bench = sys.argv[2] if len(sys.argv) > 2 else "target/record-sample/tests-bench"
ruff = os.path.expanduser("~/.cache/curate/tools/ruff-0.17.5/bin/ruff")
tot = 0
for line in open(bench + "/instances.jsonl"):
    i = json.loads(line)
    repo = "cache/mirrors/" + i["repo"] + ".git"
    d = tempfile.mkdtemp()
    subprocess.run(["git", "--git-dir", repo, "worktree", "add", "-q", "--detach", d, i["head_commit"]], check=True, capture_output=True)
    out = subprocess.run([ruff, "check", "--isolated", "--select", rules, "--output-format", "json", "--exit-zero", "."], cwd=d, capture_output=True, text=True).stdout
    added = set(); path = None; n = 0
    for l in i["patch"].splitlines():
        if l.startswith("+++ "): path = l[6:]
        elif l.startswith("@@"):
            n = int(re.search(r"\+(\d+)", l).group(1))
        elif l.startswith("+"): added.add((path, n)); n += 1
        elif l.startswith(" "): n += 1
    found = [f for f in json.loads(out) if (os.path.relpath(f["filename"], d), f["location"]["row"]) in added]
    tot += len(found)
    print(i["repo"], i.get("pull_number"), [f["code"] for f in found])
    subprocess.run(["git", "--git-dir", repo, "worktree", "remove", "--force", d], capture_output=True)
print("total", tot)
