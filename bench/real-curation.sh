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
#   BENCH_ONLY="simplejson-284 h5py-1468" runs only those PRs (name-number, as the instance ids
#   end), to measure a change on the PRs it concerns; the table then lists only their comments.
#   BENCH_BIN=/tmp/curate-pinned runs that binary instead of building target/release/curate, so a
#   run of two hours can go on while the tree changes and is rebuilt. The files the pipeline names
#   (prompts, gold/filter.calibration.json) are hashed into its task keys: changed during the run,
#   they make the table at the end read every task as pending (put them back to read the state).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CURATE_REAL_MIRRORS=${CURATE_REAL_MIRRORS:-/work/.mirror/\{owner\}+\{name\}/repo}
export CURATE_REPOS_URL=$CURATE_REAL_MIRRORS
state=${1:-target/bench-real-curation}

if ! python3 scripts/real-dataset; then
    echo "(continuing with the PRs whose mirrors are here)" >&2
fi
curate=${BENCH_BIN:-target/release/curate}
[ -n "${BENCH_BIN:-}" ] || cargo build --release --quiet
scripts/base-image
scripts/model-server start >/dev/null

pipeline=pipelines/real-curation.yaml
if [ "${BENCH_SKIP_FILTER:-0}" = 1 ] || [ -n "${BENCH_ONLY:-}" ]; then
    # A copy of the pipeline: without the filter (the context stage then reads the source
    # directly), over the chosen PRs only.
    pipeline=pipelines/.real-curation-nofilter.yaml
    [ "${BENCH_SKIP_FILTER:-0}" = 1 ] || pipeline=pipelines/.real-curation-only.yaml
    python3 - "$pipeline" <<'PY'
import json, os, re, sys
text = open("pipelines/real-curation.yaml").read()
if os.environ.get("BENCH_SKIP_FILTER", "0") == "1":
    text = text.replace("name: real-curation", "name: real-curation-nofilter")
    text = re.sub(r"  - id: filter\n(?:    .*\n)+", "", text)
    text = text.replace("    needs: filter\n", "")
only = os.environ.get("BENCH_ONLY", "").split()
if only:
    kept = 0
    with open("cache/real/swe-care-only.jsonl", "w") as out:
        for line in open("cache/real/swe-care.jsonl"):
            if line.strip() and json.loads(line)["instance_id"].split("__", 1)[1] in only:
                out.write(line)
                kept += 1
    if kept < len(only):
        sys.exit(f"BENCH_ONLY names {len(only)} PRs; the set has {kept} of them")
    text = text.replace("../cache/real/swe-care.jsonl", "../cache/real/swe-care-only.jsonl")
open(sys.argv[1], "w").write(text)
PY
fi

start=$(date +%s)
"$curate" run "$pipeline" --state "$state" --progress plain || true
end=$(date +%s)
echo
echo "## run: $((end - start)) s"
echo
"$curate" report "$pipeline" --state "$state" | sed -n '/^| Stage/,/^$/p'

# Per comment, as `curate explain` reads the state with this binary's task keys, beside what the
# set expects.
"$curate" explain "$pipeline" --state "$state" >"$state/explain.md"
python3 - "$state/explain.md" <<'PY'
import json, os, sys
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
only = os.environ.get("BENCH_ONLY", "").split()
for item in sorted(expect):
    if only and item.split("__", 1)[1].split("#")[0] not in only:
        continue
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
