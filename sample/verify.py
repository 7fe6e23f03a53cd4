#!/usr/bin/env python3
"""Check that the bundled sample behaves as documented.

1. Every commit of every sample repository passes its own pytest suite.
2. For every pull request, the probes in ``sample/probes/<name>-<number>.py``
   fail on the reviewed head commit and pass on the fixed commit.  Probe
   ``test_cN_*`` belongs to review comment N (1-based, order of prs.json);
   every comment marked ``"testable": true`` must have one, and no other
   comment may.

Usage:
    python3 sample/verify.py [--mirrors DIR] [--python PYTHON]

Without ``--mirrors`` the repositories are built into a temporary directory
first.  PYTHON must have pytest installed (default: the running interpreter).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

SAMPLE_DIR = Path(__file__).resolve().parent
PROBES_DIR = SAMPLE_DIR / "probes"
PROBE_NAME = re.compile(r"^test_c(\d+)_")


def load_build():
    sys.dont_write_bytecode = True  # keep sample/ free of __pycache__
    spec = importlib.util.spec_from_file_location("curate_sample_build", SAMPLE_DIR / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def checkout(build, git_dir: Path, sha: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", *build.GIT_OPTIONS, f"--git-dir={git_dir}", "archive", "--format=tar", sha],
        capture_output=True, check=True, env=build.clean_env(),
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


def run_pytest(python: str, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )


def probe_outcomes(python: str, cwd: Path, probe: Path) -> dict[str, bool]:
    """Run one probe file in a checkout; return {test name: passed}."""
    shutil.copy(probe, cwd / "test_curate_probe.py")
    report = cwd / "probe-report.xml"
    run_pytest(python, cwd, f"--junitxml={report}", "test_curate_probe.py")
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        failed = any(child.tag in ("failure", "error") for child in case)
        skipped = any(child.tag == "skipped" for child in case)
        outcomes[case.get("name")] = not failed and not skipped
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, help="already built <owner>/<name>.git tree")
    parser.add_argument("--python", default=sys.executable, help="interpreter with pytest")
    args = parser.parse_args(argv)

    build = load_build()
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="curate-sample-verify.") as tmp:
        tmp_path = Path(tmp)
        mirrors = args.mirrors
        if mirrors is None:
            mirrors = tmp_path / "mirrors"
            build.build_all(mirrors, quiet=True)
        records = [json.loads(line) for line in
                   (SAMPLE_DIR / "swe-care.jsonl").read_text(encoding="utf-8").splitlines()]
        counter = 0

        # 1. every commit passes its own suite
        for pdir in build.project_dirs():
            project = build.load_json(pdir / "project.json")
            git_dir = mirrors / project["owner"] / f"{project['name']}.git"
            shas = subprocess.run(
                ["git", f"--git-dir={git_dir}", "rev-list", "--all", "--reverse"],
                capture_output=True, text=True, check=True, env=build.clean_env(),
            ).stdout.split()
            for sha in shas:
                counter += 1
                work = tmp_path / f"c{counter}"
                checkout(build, git_dir, sha, work)
                result = run_pytest(args.python, work)
                summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
                status = "ok" if result.returncode == 0 else "FAIL"
                print(f"{status:4} {project['name']:<11} {sha[:7]}  {summary}")
                if result.returncode != 0:
                    problems.append(f"{project['name']} {sha[:7]}: test suite fails")
                shutil.rmtree(work)

        # 2. probes fail on head, pass on fixed
        print()
        for pdir in build.project_dirs():
            project = build.load_json(pdir / "project.json")
            git_dir = mirrors / project["owner"] / f"{project['name']}.git"
            for pr in build.load_json(pdir / "prs.json")["pulls"]:
                instance = f"{project['owner']}__{project['name']}-{pr['number']}"
                record = next((r for r in records if r["instance_id"] == instance), None)
                if record is None:
                    problems.append(f"{instance}: missing from swe-care.jsonl")
                    continue
                probe = PROBES_DIR / f"{project['name']}-{pr['number']}.py"
                wanted = {n for n, c in enumerate(pr["comments"], 1) if c.get("testable")}
                if not probe.exists():
                    if wanted:
                        problems.append(f"{instance}: no probe file for comments {sorted(wanted)}")
                    continue
                results = {}
                for side, sha in (("head", record["commit_to_review"]["head_commit"]),
                                  ("fixed", record["merged_commit"])):
                    counter += 1
                    work = tmp_path / f"p{counter}"
                    checkout(build, git_dir, sha, work)
                    results[side] = probe_outcomes(args.python, work, probe)
                    shutil.rmtree(work)
                by_comment: dict[int, list[str]] = {}
                for name in results["fixed"]:
                    m = PROBE_NAME.match(name)
                    if not m:
                        problems.append(f"{instance}: probe {name} is not named test_cN_...")
                        continue
                    by_comment.setdefault(int(m.group(1)), []).append(name)
                if set(by_comment) != wanted:
                    problems.append(f"{instance}: probes cover comments {sorted(by_comment)}, "
                                    f"testable comments are {sorted(wanted)}")
                for n in sorted(by_comment):
                    kind = pr["comments"][n - 1]["kind"] if n <= len(pr["comments"]) else "?"
                    head_fails = all(not results["head"].get(t, True) for t in by_comment[n])
                    fixed_passes = all(results["fixed"][t] for t in by_comment[n])
                    ok = head_fails and fixed_passes
                    print(f"{'ok' if ok else 'FAIL':4} {instance:<32} comment {n} ({kind}): "
                          f"head {'fails' if head_fails else 'PASSES'}, "
                          f"fixed {'passes' if fixed_passes else 'FAILS'}")
                    if not ok:
                        problems.append(f"{instance} comment {n}: probe does not separate head and fixed")

    print()
    if problems:
        for p in problems:
            print(f"problem: {p}")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
