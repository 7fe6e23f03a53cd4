#!/usr/bin/env bash
# Table 5 on the real-world development set: exports the comments a run of
# bench/real-curation.sh validated (with the regression check) as a benchmark in cache/real/benchmark,
# runs pipelines/eval-real.yaml on it (the human comments, the built-in LLM reviewer, ruff,
# PR-Agent on the local model and the no-review control, each followed by one revision by the
# agent that validated) and prints the report. Live with the local model; its answers and the tools'
# reviews are recorded under the git-ignored cache/real, so a second run replays them.
#
# Usage, from the repository root, after bench/real-curation.sh:
#   bash bench/real-eval.sh CURATION_STATE [CURATION_PIPELINE]
#   (the pipeline the state was run with; default the copy bench/real-curation.sh ran last:
#   pipelines/.real-curation-nofilter.yaml, else .real-curation-only.yaml, else the real one)
#   BENCH_STAGE=tests exports every comment with an accepted test instead of the validated ones.
#   BENCH_BIN=/tmp/curate-pinned runs that binary instead of building target/release/curate.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CURATE_REAL_MIRRORS=${CURATE_REAL_MIRRORS:-/work/.mirror/\{owner\}+\{name\}/repo}
export CURATE_REPOS_URL=$CURATE_REAL_MIRRORS
state=${1:?usage: bash bench/real-eval.sh CURATION_STATE [CURATION_PIPELINE]}
pipeline=${2:-}
if [ -z "$pipeline" ]; then
    for p in pipelines/.real-curation-nofilter.yaml pipelines/.real-curation-only.yaml pipelines/real-curation.yaml; do
        if [ -f "$p" ]; then pipeline=$p; break; fi
    done
fi
curate=${BENCH_BIN:-target/release/curate}
[ -n "${BENCH_BIN:-}" ] || cargo build --release --quiet
scripts/model-server start >/dev/null
scripts/review-tools --pr-agent >/dev/null

"$curate" export "$pipeline" --state "$state" --stage "${BENCH_STAGE:-validate}" --out cache/real/benchmark
echo "exported $(wc -l <cache/real/benchmark/instances.jsonl) instance(s) from the ${BENCH_STAGE:-validate} stage of $state"
eval_state=$state-eval
start=$(date +%s)
"$curate" run pipelines/eval-real.yaml --state "$eval_state" --progress plain || true
echo
echo "## evaluation: $(($(date +%s) - start)) s"
echo
"$curate" report pipelines/eval-real.yaml --state "$eval_state"
