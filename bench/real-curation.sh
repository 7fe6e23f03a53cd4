#!/usr/bin/env bash
# The whole curation (filter, attribution, environment, the project's tests, tests, validation) of
# the real-world development set, pipelines/real-curation.yaml, live with the local model: the
# funnel, and per comment what the set expects (`expect`: test or none) against what it got (where
# it stopped, the last miss, who wrote the accepted test, the validation with its regression check).
#
# Needs the set's git mirrors (scripts/real-dataset lists the missing ones; fetch them with the
# search tool's fetch, or clone them where GitHub answers) and the local model
# (scripts/model-server; built once per machine). Model answers are recorded under the git-ignored
# cache/real, so a second run replays them; environments are reused from Docker's images.
#
# Usage, from the repository root:  bash bench/real-curation.sh [STATE_DIR]
#   (default target/bench-real-curation; an existing state is resumed, not started again)
#   BENCH_SKIP_FILTER=1 runs every comment past the filter (a copy of the pipeline without it), to
#   measure the stages after it on every comment the set expects a test of.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CURATE_REAL_MIRRORS=${CURATE_REAL_MIRRORS:-/work/.mirror/\{owner\}+\{name\}/repo}
export CURATE_REPOS_URL=$CURATE_REAL_MIRRORS
state=${1:-target/bench-real-curation}

if ! python3 scripts/real-dataset; then
    echo "(continuing with the PRs whose mirrors are here)" >&2
fi
cargo build --release --quiet
scripts/base-image
scripts/model-server start >/dev/null

pipeline=pipelines/real-curation.yaml
if [ "${BENCH_SKIP_FILTER:-0}" = 1 ]; then
    # The same pipeline with the filter cut out: the context stage reads the source directly.
    pipeline=pipelines/.real-curation-nofilter.yaml
    python3 - <<'PY'
import re
text = open("pipelines/real-curation.yaml").read()
text = text.replace("name: real-curation", "name: real-curation-nofilter")
text = re.sub(r"  - id: filter\n(?:    .*\n)+", "", text)
text = text.replace("    needs: filter\n", "")
open("pipelines/.real-curation-nofilter.yaml", "w").write(text)
PY
fi

start=$(date +%s)
target/release/curate run "$pipeline" --state "$state" --progress plain || true
end=$(date +%s)
echo
echo "## run: $((end - start)) s"
echo
target/release/curate report "$pipeline" --state "$state" | sed -n '/^| Stage/,/^$/p'

# Per comment, as `curate explain` reads the state with this binary's task keys, beside what the
# set expects.
target/release/curate explain "$pipeline" --state "$state" >"$state/explain.md"
python3 - "$state/explain.md" <<'PY'
import json, sys
expect = {}
for line in open("datasets/real/prs.jsonl"):
    if line.strip():
        r = json.loads(line)
        owner, name = r["repo"].split("/")
        for n, c in enumerate(r["comments"], 1):
            expect[f"{owner}__{name}-{r['pr']}#{n}"] = c.get("expect", "test")
rows = {}
for line in open(sys.argv[1]).read().splitlines()[2:]:
    cells = [c.strip() for c in line.strip("|").split(" | ")]
    if len(cells) >= 5:
        rows[cells[0]] = cells
print("| comment | expect | last stage | outcome | why | test by |")
print("|---|---|---|---|---|---|")
got = {"test": [0, 0, 0], "none": [0, 0, 0]}
for item in sorted(expect):
    _, stage, outcome, why, by = (rows.get(item) or [item, "-", "not in the state", "", ""])[:5]
    e = expect[item]
    got[e][0] += 1
    got[e][1] += bool(by)
    got[e][2] += stage == "validate" and outcome == "kept"
    print(f"| {item} | {e} | {stage} | {outcome} | {why} | {by} |")
print()
for e, (n, tests, valid) in got.items():
    print(f"expect {e}: {n} comments, {tests} with an accepted test, {valid} validated (with the regression check)")
PY
