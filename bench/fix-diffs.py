#!/usr/bin/env python3
"""Adds to real review comments what the PR's fix did to the commented file, read from git: the
`fix_diff` field of `curate gold --gold FILE` rows (issue 27), for measuring the filter's fix facts
on real review traffic.

Each row needs `repo`, `pr`, `path`, `diff_hunk` and `created_at` (the comment's date). From the
repository's mirror (the search tool's fetch brings GitHub's `refs/pull/N/head` too):
- the PR's commits are read from `refs/pull/N/head`'s history (the commits that changed the path);
- the reviewed commit is the latest of them, dated no later than the day after the comment, whose
  file holds the hunk's new-side lines at the end of the hunk (where the comment is); failing the
  date, the latest that holds them;
- the fixed side is the PR's head, `refs/pull/N/head`: the PR as it ended;
- `fix_diff` is `git diff --unified=<whole file>` of the path from the reviewed commit to the head,
  so that curate reads the reviewed file back from it; "" when the head left the file alone.
A row whose mirror, PR ref or reviewed commit is missing is written without `fix_diff` (the fact
is then unknown and decides nothing), and counted on stderr with why.

Usage: python3 bench/fix-diffs.py ROWS.jsonl OUT.jsonl   (mirrors: CURATE_REAL_MIRRORS, default
/work/.mirror/{owner}+{name}/repo). The rows are real comments: keep both files outside the
repository.
"""
import collections
import datetime
import json
import os
import subprocess
import sys

MIRRORS = os.environ.get("CURATE_REAL_MIRRORS", "/work/.mirror/{owner}+{name}/repo")


def git(mirror, *args, check=True):
    out = subprocess.run(["git", "--git-dir", mirror, *args], capture_output=True, text=True, errors="replace")
    if check and out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return out.stdout if out.returncode == 0 else None


def new_side_tail(hunk, n=3):
    """The last n new-side lines of the hunk (context and added), the commented line last."""
    lines = [l[1:] if l[:1] in " +" else (l if l == "" else None) for l in hunk.splitlines()[1:]]
    lines = [l for l in lines if l is not None]
    return lines[-n:]


def holds(text, tail):
    if not tail:
        return False
    lines = [l.rstrip() for l in text.splitlines()]
    want = [l.rstrip() for l in tail]
    return any(lines[i : i + len(want)] == want for i in range(len(lines) - len(want) + 1))


def fix_diff(row):
    owner, name = row["repo"].split("/")
    mirror = MIRRORS.format(owner=owner, name=name, repo=row["repo"])
    # Some snapshots arrive as a work tree's `.git` rather than a bare directory.
    if os.path.isdir(os.path.join(mirror, ".git")):
        mirror = os.path.join(mirror, ".git")
    if not os.path.isdir(mirror):
        return None, "no mirror"
    head = git(mirror, "rev-parse", "--verify", "-q", f"refs/pull/{row['pr']}/head", check=False)
    if not head:
        return None, "no PR ref"
    head = head.strip()
    # The head's history, newest first: the PR's commits, then the default branch's before them
    # (a PR merged without a merge commit is already part of that branch, so no merge-base
    # separates the two; the latest commit that holds the hunk is the PR's own when it has one).
    commits = git(mirror, "log", "--format=%H %cs", "-n", "300", head, "--", row["path"], check=False) or ""
    commits = [c.split() for c in commits.splitlines()]
    tail = new_side_tail(row.get("diff_hunk") or "")
    day = datetime.date.fromisoformat(row["created_at"][:10]) + datetime.timedelta(days=1)
    holding = []
    for sha, date in commits:
        text = git(mirror, "show", f"{sha}:{row['path']}", check=False)
        if text is not None and holds(text, tail):
            holding.append((sha, datetime.date.fromisoformat(date)))
    if not holding:
        return None, "no PR commit holds the hunk"
    dated = [c for c in holding if c[1] <= day]
    reviewed = (dated or holding)[0][0]
    size = len((git(mirror, "show", f"{reviewed}:{row['path']}", check=False) or "").splitlines())
    diff = git(mirror, "diff", f"--unified={size + 10}", reviewed, head, "--", row["path"], check=False)
    if diff is None:
        return None, "git diff failed"
    return diff, "reviewed commit found" + ("" if dated else " (not by date)")


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    why = collections.Counter()
    missing = set()
    with open(sys.argv[2], "w") as out:
        for row in rows:
            diff, reason = fix_diff(row)
            why[reason] += 1
            if reason == "no mirror":
                missing.add(row["repo"])
            if diff is not None:
                row["fix_diff"] = diff
            out.write(json.dumps(row) + "\n")
    for reason, n in why.most_common():
        print(f"{n:4}  {reason}", file=sys.stderr)
    if missing:
        print("fetch these mirrors (the search tool's fetch, github:OWNER/NAME):", file=sys.stderr)
        for repo in sorted(missing):
            print(f"  {repo}", file=sys.stderr)


if __name__ == "__main__":
    main()
