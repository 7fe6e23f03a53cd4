#!/usr/bin/env python3
"""Build the bundled curate sample: bare git mirrors plus a SWE-CARE JSONL file.

Every project under ``sample/projects/<name>/`` stores its history as plain
text:

    project.json                 owner, name, description, authors
    prs.json                     pull requests and their review comments
    commits/NN-<slug>/meta.json  message, parent, optional merge, author, date, branch
    commits/NN-<slug>/files/...  full contents of every file added or changed
    commits/NN-<slug>/DELETE     optional, one removed path per line

This script replays that history into ``<out>/<owner>/<name>.git`` (bare
repositories with a ``main`` branch and one ``pr/<number>`` branch per pull
request) and writes ``sample/swe-care.jsonl`` from the real diffs.  Commit ids
are identical on every machine and every run: author, committer, dates,
modes and messages all come from the data, and git runs with system and
global configuration switched off.

Usage:
    python3 sample/build.py                # build into cache/mirrors, write the JSONL
    python3 sample/build.py --out DIR      # build somewhere else
    python3 sample/build.py --check        # rebuild in a temp dir, compare the JSONL
    python3 sample/build.py --table        # print the PR/comment table as Markdown
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SAMPLE_DIR = Path(__file__).resolve().parent
REPO_ROOT = SAMPLE_DIR.parent
PROJECTS_DIR = SAMPLE_DIR / "projects"
JSONL_PATH = SAMPLE_DIR / "swe-care.jsonl"
DEFAULT_OUT = REPO_ROOT / "cache" / "mirrors"

FILE_MODE = "100644"

# Options passed to every git invocation so that neither user configuration
# nor git's own defaults can change object ids or diff text.
GIT_OPTIONS = [
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
    "-c", "core.eol=lf",
    "-c", "core.attributesFile=/dev/null",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.quotePath=true",
    "-c", "core.abbrev=7",
    "-c", "commit.gpgSign=false",
    "-c", "tag.gpgSign=false",
    "-c", "i18n.commitEncoding=UTF-8",
    "-c", "init.defaultBranch=main",
    "-c", "color.ui=false",
    "-c", "diff.renames=false",
    "-c", "diff.algorithm=myers",
    "-c", "diff.indentHeuristic=true",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "diff.relative=false",
    "-c", "diff.suppressBlankEmpty=false",
    "-c", "diff.context=3",
    "-c", "diff.interHunkContext=0",
]

# Flags for `git diff`; together with GIT_OPTIONS this is plain `git diff` output.
DIFF_FLAGS = [
    "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
    "--diff-algorithm=myers", "--indent-heuristic", "-U3",
    "--inter-hunk-context=0", "--src-prefix=a/", "--dst-prefix=b/",
]


class DataError(Exception):
    """The sample data is inconsistent (bad parent, comment off the diff, ...)."""


# --------------------------------------------------------------------------
# git plumbing


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
        LANG="C",
        TZ="UTC",
    )
    return env


def git(git_dir: Path, *args: str, stdin: str | None = None,
        env: dict[str, str] | None = None) -> str:
    cmd = ["git", *GIT_OPTIONS, f"--git-dir={git_dir}", *args]
    proc = subprocess.run(
        cmd,
        input=None if stdin is None else stdin.encode("utf-8"),
        capture_output=True,
        env=env or clean_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"git {' '.join(args)} failed ({proc.returncode}):\n"
            + proc.stderr.decode("utf-8", "replace")
        )
    return proc.stdout.decode("utf-8")


def git_date(iso: str) -> str:
    """'2024-03-01T09:30:00Z' -> '1709285400 +0000' (git's raw date format)."""
    if not iso.endswith("Z"):
        raise DataError(f"dates must be UTC and end in 'Z': {iso!r}")
    stamp = dt.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    return f"{int(stamp.timestamp())} +0000"


# --------------------------------------------------------------------------
# loading the data


def load_json(path: Path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def project_dirs() -> list[Path]:
    return sorted(p for p in PROJECTS_DIR.iterdir() if (p / "project.json").is_file())


def load_commits(project_dir: Path) -> list[dict]:
    commits = []
    for cdir in sorted((project_dir / "commits").iterdir()):
        if not cdir.is_dir():
            continue
        meta = load_json(cdir / "meta.json")
        meta["id"] = cdir.name
        meta["dir"] = cdir
        files_dir = cdir / "files"
        meta["files"] = {}
        if files_dir.is_dir():
            for path in sorted(files_dir.rglob("*")):
                if path.is_file():
                    meta["files"][path.relative_to(files_dir).as_posix()] = path
        delete_file = cdir / "DELETE"
        meta["delete"] = []
        if delete_file.is_file():
            meta["delete"] = [
                line.strip() for line in delete_file.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")
            ]
        commits.append(meta)
    return commits


# --------------------------------------------------------------------------
# building one repository


def build_repo(project_dir: Path, out_root: Path) -> dict:
    """Build one bare repository; return {'commits': {dir: sha}, 'branches': {...}}."""
    project = load_json(project_dir / "project.json")
    prs = load_json(project_dir / "prs.json")["pulls"]
    commits = load_commits(project_dir)
    authors = project["authors"]

    target = out_root / project["owner"] / f"{project['name']}.git"
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{project['name']}.", dir=target.parent))
    git_dir = work / "repo.git"
    try:
        git(git_dir, "init", "--quiet", "--bare", "--object-format=sha1", str(git_dir))
        shas, trees = {}, {}
        branch_tips: dict[str, str] = {}
        for c in commits:
            cid = c["id"]
            parent = c.get("parent")
            merge = c.get("merge")
            if parent is not None and parent not in shas:
                raise DataError(f"{project_dir.name}/{cid}: unknown parent {parent!r}")
            if merge is not None:
                if merge not in shas:
                    raise DataError(f"{project_dir.name}/{cid}: unknown merge parent {merge!r}")
                # Only merges that the merged branch already contains are
                # supported, so the merge tree is the merged branch's tree.
                if not is_ancestor(commits, parent, merge):
                    raise DataError(f"{project_dir.name}/{cid}: {parent} is not an ancestor of {merge}")
                tree = dict(trees[merge])
            else:
                tree = dict(trees[parent]) if parent is not None else {}
            for path in c["delete"]:
                if path not in tree:
                    raise DataError(f"{project_dir.name}/{cid}: DELETE of missing file {path}")
                del tree[path]
            tree.update(c["files"])
            if not tree:
                raise DataError(f"{project_dir.name}/{cid}: empty tree")
            trees[cid] = tree
            tree_sha = write_tree(git_dir, work, tree)
            parents = [shas[p] for p in (parent, merge) if p is not None]
            shas[cid] = commit_tree(git_dir, tree_sha, parents, c, authors, project_dir.name)
            branch = c.get("branch", "main")
            branch_tips[branch] = cid

        # Every PR branch must end at the PR's fixed commit.
        for pr in prs:
            branch = f"pr/{pr['number']}"
            if branch_tips.get(branch) != pr["fixed"]:
                raise DataError(
                    f"{project_dir.name}: branch {branch} ends at {branch_tips.get(branch)}, "
                    f"prs.json says fixed is {pr['fixed']}"
                )
        for branch in sorted(branch_tips):
            git(git_dir, "update-ref", f"refs/heads/{branch}", shas[branch_tips[branch]])
        git(git_dir, "symbolic-ref", "HEAD", "refs/heads/main")
        git(git_dir, "config", "gc.auto", "0")
        # Replace any previous build in one step.
        if target.exists():
            shutil.rmtree(target)
        os.replace(git_dir, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "project": project,
        "prs": prs,
        "git_dir": target,
        "commits": shas,
        "branches": {b: shas[c] for b, c in sorted(branch_tips.items())},
    }


def is_ancestor(commits: list[dict], ancestor: str, descendant: str) -> bool:
    by_id = {c["id"]: c for c in commits}
    todo, seen = [descendant], set()
    while todo:
        cid = todo.pop()
        if cid == ancestor:
            return True
        if cid in seen or cid is None:
            continue
        seen.add(cid)
        todo.extend(p for p in (by_id[cid].get("parent"), by_id[cid].get("merge")) if p)
    return False


def write_tree(git_dir: Path, work: Path, tree: dict[str, Path]) -> str:
    paths = sorted(tree)
    blobs = git(
        git_dir, "hash-object", "-w", "--no-filters", "--stdin-paths",
        stdin="".join(f"{tree[p]}\n" for p in paths),
    ).split()
    if len(blobs) != len(paths):
        raise RuntimeError("hash-object returned the wrong number of ids")
    env = clean_env()
    env["GIT_INDEX_FILE"] = str(work / "index")
    if os.path.exists(env["GIT_INDEX_FILE"]):
        os.remove(env["GIT_INDEX_FILE"])
    git(git_dir, "update-index", "--add", "--index-info",
        stdin="".join(f"{FILE_MODE} {sha}\t{p}\n" for p, sha in zip(paths, blobs)), env=env)
    return git(git_dir, "write-tree", env=env).strip()


def commit_tree(git_dir: Path, tree_sha: str, parents: list[str], meta: dict,
                authors: dict, project_name: str) -> str:
    who = authors.get(meta["author"])
    if who is None:
        raise DataError(f"{project_name}/{meta['id']}: unknown author {meta['author']!r}")
    committer = authors.get(meta.get("committer", meta["author"]))
    date = git_date(meta["date"])
    env = clean_env()
    env.update(
        GIT_AUTHOR_NAME=who["name"], GIT_AUTHOR_EMAIL=who["email"], GIT_AUTHOR_DATE=date,
        GIT_COMMITTER_NAME=committer["name"], GIT_COMMITTER_EMAIL=committer["email"],
        GIT_COMMITTER_DATE=date,
    )
    message = meta["message"].rstrip("\n") + "\n"
    args = ["commit-tree", tree_sha]
    for p in parents:
        args += ["-p", p]
    return git(git_dir, *args, stdin=message, env=env).strip()


# --------------------------------------------------------------------------
# diffs and review-comment anchoring

HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def diff(git_dir: Path, a: str, b: str) -> str:
    return git(git_dir, "diff", *DIFF_FLAGS, a, b)


def parse_diff(text: str) -> dict[str, list[list[tuple[str, int | None, int | None]]]]:
    """Split a unified diff into {path: [hunk, ...]}.

    A hunk is a list of (raw_line, old_lineno, new_lineno); the first entry is
    the ``@@`` header with both numbers None.
    """
    files: dict[str, list] = {}
    lines = text.split("\n")
    i = 0
    path = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            path = None
            i += 1
            continue
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old = line[4:]
            new = lines[i + 1][4:]
            path = new[2:] if new != "/dev/null" else old[2:]
            files.setdefault(path, [])
            i += 2
            continue
        m = HUNK_RE.match(line)
        if m and path is not None:
            old_no, new_no = int(m.group(1)), int(m.group(3))
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(4)) if m.group(4) is not None else 1
            hunk = [(line, None, None)]
            i += 1
            while i < len(lines) and (old_left > 0 or new_left > 0):
                raw = lines[i]
                tag = raw[:1]
                if tag == " ":
                    hunk.append((raw, old_no, new_no))
                    old_no += 1
                    new_no += 1
                    old_left -= 1
                    new_left -= 1
                elif tag == "-":
                    hunk.append((raw, old_no, None))
                    old_no += 1
                    old_left -= 1
                elif tag == "+":
                    hunk.append((raw, None, new_no))
                    new_no += 1
                    new_left -= 1
                elif tag == "\\":
                    hunk.append((raw, None, None))
                else:
                    raise RuntimeError(f"unexpected diff line {raw!r}")
                i += 1
            while i < len(lines) and lines[i].startswith("\\"):
                hunk.append((lines[i], None, None))
                i += 1
            files[path].append(hunk)
            continue
        i += 1
    return files


def locate(hunks, side: str, line: int):
    """Return (hunk_index, row_index) of the diff row for `line` on `side`."""
    for h, hunk in enumerate(hunks):
        for r, (raw, old_no, new_no) in enumerate(hunk):
            if r == 0:
                continue
            if side == "RIGHT" and new_no == line:
                return h, r
            if side == "LEFT" and old_no == line and raw.startswith(("-", " ")):
                return h, r
    return None


def anchor_comment(parsed, comment: dict, where: str) -> dict:
    path = comment["path"]
    side = comment.get("side", "RIGHT")
    if side not in ("RIGHT", "LEFT"):
        raise DataError(f"{where}: side must be RIGHT or LEFT")
    hunks = parsed.get(path)
    if not hunks:
        raise DataError(f"{where}: {path} is not part of the reviewed diff")
    end = locate(hunks, side, comment["line"])
    if end is None:
        raise DataError(f"{where}: {side} line {comment['line']} of {path} is not in the diff")
    h, r = end
    raw = hunks[h][r][0]
    anchor = comment.get("anchor")
    if anchor and anchor not in raw[1:]:
        raise DataError(f"{where}: line {comment['line']} is {raw!r}, expected it to contain {anchor!r}")
    start = comment.get("start_line")
    if start is not None:
        begin = locate(hunks, side, start)
        if begin is None or begin[0] != h or begin[1] >= r:
            raise DataError(f"{where}: start_line {start} must precede line {comment['line']} in the same hunk")
    diff_hunk = "\n".join(row[0] for row in hunks[h][: r + 1])
    if side == "RIGHT":
        line, original_line = comment["line"], comment["line"]
        start_line = original_start_line = start
    else:
        line, original_line = None, comment["line"]
        start_line, original_start_line = None, start
    return {
        "text": comment["text"],
        "path": path,
        "diff_hunk": diff_hunk,
        "line": line,
        "start_line": start_line,
        "original_line": original_line,
        "original_start_line": original_start_line,
    }


# --------------------------------------------------------------------------
# SWE-CARE records


def commit_message(git_dir: Path, sha: str) -> str:
    return git(git_dir, "show", "-s", "--format=%B", sha).rstrip("\n")


def records_for(built: dict, commits_meta: dict[str, dict]) -> list[dict]:
    project, git_dir, shas = built["project"], built["git_dir"], built["commits"]
    repo = f"{project['owner']}/{project['name']}"
    records = []
    for pr in sorted(built["prs"], key=lambda p: p["number"]):
        where = f"{repo}#{pr['number']}"
        head_meta = commits_meta[pr["head"]]
        for key in ("base", "head", "fixed"):
            if pr[key] not in shas:
                raise DataError(f"{where}: unknown {key} commit {pr[key]!r}")
        if head_meta.get("parent") != pr["base"]:
            raise DataError(f"{where}: head {pr['head']} is not a child of base {pr['base']}")
        if not is_ancestor(list(commits_meta.values()), pr["head"], pr["fixed"]):
            raise DataError(f"{where}: fixed commit does not descend from head")
        base, head, fixed = shas[pr["base"]], shas[pr["head"]], shas[pr["fixed"]]
        patch = diff(git_dir, base, head)
        parsed = parse_diff(patch)
        comments = [
            anchor_comment(parsed, c, f"{where} comment {n}")
            for n, c in enumerate(pr["comments"], start=1)
        ]
        issues = [
            {"number": i["number"], "title": i["title"], "body": i["body"]}
            for i in pr.get("resolved_issues", [])
        ]
        if "problem_statement" in pr:
            problem = pr["problem_statement"]
        elif issues:
            problem = "\n\n".join(f"{i['title']}\n\n{i['body']}" for i in issues)
        else:
            problem = f"{pr['title']}\n\n{pr['body']}"
        records.append({
            "instance_id": f"{project['owner']}__{project['name']}-{pr['number']}",
            "repo": repo,
            "language": "Python",
            "pull_number": pr["number"],
            "title": pr["title"],
            "body": pr["body"],
            "created_at": head_meta["date"],
            "problem_statement": problem,
            "hints_text": pr.get("hints_text", ""),
            "resolved_issues": issues,
            "base_commit": base,
            "commit_to_review": {
                "head_commit": head,
                "head_commit_message": commit_message(git_dir, head),
                "patch_to_review": patch,
            },
            "reference_review_comments": comments,
            "merged_commit": fixed,
            "merged_patch": diff(git_dir, base, fixed),
            "metadata": {
                "problem_domain": pr["metadata"]["problem_domain"],
                "difficulty": pr["metadata"]["difficulty"],
                "estimated_review_effort": pr["metadata"]["estimated_review_effort"],
            },
        })
    return records


def build_all(out_root: Path, quiet: bool = False) -> tuple[str, list[dict]]:
    out_root.mkdir(parents=True, exist_ok=True)
    lines, summaries = [], []
    for pdir in project_dirs():
        built = build_repo(pdir, out_root)
        commits_meta = {c["id"]: c for c in load_commits(pdir)}
        for record in records_for(built, commits_meta):
            lines.append(json.dumps(record, ensure_ascii=False))
        summaries.append(built)
        if not quiet:
            print(f"built {built['git_dir']}  ({len(built['commits'])} commits, "
                  f"{len(built['branches'])} branches)", file=sys.stderr)
    return "".join(line + "\n" for line in lines), summaries


# --------------------------------------------------------------------------
# command line


def markdown_table() -> str:
    """The PR table and the comment table used in sample/README.md."""
    prs = ["| Instance | Title | Base → head → fixed | Comments |", "|---|---|---|---|"]
    comments = ["| Instance | # | Kind | Actionable | Testable | Where (head side unless noted) |",
                "|---|---|---|---|---|---|"]
    for pdir in project_dirs():
        project = load_json(pdir / "project.json")
        for pr in sorted(load_json(pdir / "prs.json")["pulls"], key=lambda p: p["number"]):
            instance = f"{project['name']}#{pr['number']}"
            prs.append(f"| {instance} | {pr['title']} | `{pr['base']}` → `{pr['head']}` → "
                       f"`{pr['fixed']}` | {len(pr['comments'])} |")
            for n, c in enumerate(pr["comments"], start=1):
                span = f"{c['start_line']}-{c['line']}" if c.get("start_line") else str(c["line"])
                side = " (deleted line, left side)" if c.get("side") == "LEFT" else ""
                comments.append(
                    f"| {instance} | {n} | {c['kind']} | {'yes' if c['actionable'] else 'no'} | "
                    f"{'yes' if c.get('testable') else 'no'} | `{c['path']}:{span}`{side} |"
                )
    return "\n".join(prs) + "\n\n" + "\n".join(comments) + "\n"


def report_difference(current: str, expected: str) -> None:
    """Say which records of the committed JSONL differ from a fresh build."""
    old = {json.loads(line)["instance_id"]: line for line in current.splitlines() if line.strip()}
    new = {json.loads(line)["instance_id"]: line for line in expected.splitlines()}
    for instance in sorted(set(old) | set(new)):
        if instance not in old:
            print(f"  missing record {instance}", file=sys.stderr)
        elif instance not in new:
            print(f"  stale record {instance}", file=sys.stderr)
        elif old[instance] != new[instance]:
            a, b = json.loads(old[instance]), json.loads(new[instance])
            keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            print(f"  {instance} differs in: {', '.join(keys)}", file=sys.stderr)
    if list(old) != list(new) and set(old) == set(new):
        print("  records are in a different order", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None,
                        help=f"where to put <owner>/<name>.git (default: {DEFAULT_OUT.relative_to(REPO_ROOT)})")
    parser.add_argument("--check", action="store_true",
                        help="rebuild in a temporary directory and fail if sample/swe-care.jsonl is stale")
    parser.add_argument("--table", action="store_true", help="print the PR/comment table and exit")
    args = parser.parse_args(argv)

    if args.table:
        sys.stdout.write(markdown_table())
        return 0
    try:
        if args.check:
            with tempfile.TemporaryDirectory(prefix="curate-sample-check.") as tmp:
                expected, _ = build_all(Path(tmp), quiet=True)
            current = JSONL_PATH.read_text(encoding="utf-8") if JSONL_PATH.exists() else ""
            if current != expected:
                report_difference(current, expected)
                print(f"{JSONL_PATH.relative_to(REPO_ROOT)} is out of date; "
                      "run python3 sample/build.py", file=sys.stderr)
                return 1
            print(f"{JSONL_PATH.relative_to(REPO_ROOT)} is up to date "
                  f"({len(expected.splitlines())} records)", file=sys.stderr)
            return 0
        out = args.out if args.out is not None else DEFAULT_OUT
        text, _ = build_all(out.resolve())
        current = JSONL_PATH.read_text(encoding="utf-8") if JSONL_PATH.exists() else None
        if current != text:  # leave an up-to-date file alone, so readers never see it half written
            JSONL_PATH.write_text(text, encoding="utf-8", newline="\n")
            print(f"wrote {JSONL_PATH.relative_to(REPO_ROOT)} ({len(text.splitlines())} records)",
                  file=sys.stderr)
        return 0
    except DataError as exc:
        print(f"sample data error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
