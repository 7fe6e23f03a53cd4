#!/usr/bin/env bash
# Cold and warm environment builds for a project with a real dependency tree (numpy, pandas,
# requests): two PRs of one repository with the same dependency spec. The first builds the
# dependency layer; the second must reuse it. Prints each PR's seconds per layer.
#
# Usage, from the repository root:  bash bench/environment-deps.sh   (needs PyPI and Docker)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo build --release --quiet
scripts/base-image

work=$(pwd)/target/bench-environment-deps
rm -rf "$work"
mkdir -p "$work/src/bench/heavy"
for layer in env deps; do
    docker images --format '{{.Repository}}:{{.Tag}}' | { grep -E "^curate-$layer/bench" || true; } | xargs -r docker rmi -f >/dev/null
done
docker image prune -f >/dev/null

repo="$work/src/bench/heavy"
git() { command git -c user.name=bench -c user.email=bench@example.org -c commit.gpgsign=false -C "$repo" "$@"; }
git init -q -b main
cat > "$repo/pyproject.toml" <<'TOML'
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "heavy"
version = "0.1.0"
requires-python = ">=3.9"
dependencies = ["numpy>=1.26", "pandas>=2.1", "requests>=2.31"]

[project.optional-dependencies]
test = ["pytest>=7"]
TOML
mkdir -p "$repo/heavy" "$repo/tests"
printf 'import numpy\n\ndef mean(xs):\n    return float(numpy.mean(xs))\n' > "$repo/heavy/__init__.py"
printf 'from heavy import mean\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2.0\n' > "$repo/tests/test_mean.py"
git add -A && GIT_COMMITTER_DATE=2024-05-01T10:00:00Z git commit -q --date=2024-05-01T10:00:00Z -m one
first=$(git rev-parse HEAD)
printf 'import numpy\n\ndef mean(xs):\n    return float(numpy.mean(xs)) if len(xs) else 0.0\n' > "$repo/heavy/__init__.py"
git add -A && GIT_COMMITTER_DATE=2024-05-08T10:00:00Z git commit -q --date=2024-05-08T10:00:00Z -m two
second=$(git rev-parse HEAD)

for n in 1 2; do
    head=$([ $n = 1 ] && echo "$first" || echo "$second")
    printf '{"instance_id": "bench__heavy-%s", "repo": "bench/heavy", "base_commit": "%s", "created_at": "2024-05-0%sT10:00:00Z", "commit_to_review": {"head_commit": "%s"}, "merged_commit": "%s", "reference_review_comments": []}\n' \
        "$n" "$head" "$n" "$head" "$head"
done > "$work/prs.jsonl"
cat > "$work/p.yaml" <<YAML
name: bench-environment-deps
source: {kind: swe-care, path: prs.jsonl}
defaults:
  cache: cache
  repos: {url: "$work/src/{repo}"}
  concurrency: {docker: 1}
stages:
  - id: environment
    kind: environment
YAML
target/release/curate run "$work/p.yaml" --progress quiet >/dev/null
python3 - "$work/.curate/bench-environment-deps/state.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = list(db.execute("SELECT item, output, duration_ms FROM tasks WHERE state = 'kept' ORDER BY finished_at"))
print("| PR | total s | deps s | instance s | verify s | dependency layer |")
print("|---|---:|---:|---:|---:|---|")
for item, out, ms in rows:
    o = json.loads(out)
    s = o["seconds"]
    print(f"| {item} | {ms / 1000:.1f} | {s['deps']:.1f} | {s['instance']:.1f} | {s['verify']:.1f} | {'reused' if o['deps_reused'] else 'built'} |")
if len(rows) == 2:
    print(f"\nwarm / cold: {rows[1][2] / rows[0][2]:.1%}")
PY
