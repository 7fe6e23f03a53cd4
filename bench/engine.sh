#!/usr/bin/env bash
# bench/engine.sh — measure curate's engine against Snakemake on the same DAG.
#
# Shape: N items, 4 chained no-op stages (s1 -> s2 -> s3 -> s4), i.e. 4*N tasks.
# Each tool is run twice: cold (fresh state) and again with nothing to do.
# Both runs go under GNU /usr/bin/time -v; wall time is taken with
# `date +%s.%N` around the command, peak RSS from "Maximum resident set size".
#
# Usage (from the repo root):  bash bench/engine.sh
#
# Environment:
#   BENCH_ITEMS             items for curate (default 10000)
#   BENCH_SNAKEMAKE_ITEMS   items for Snakemake (default = BENCH_ITEMS); when it
#                           differs, ratios are computed per task
#   CURATE_BIN              use this curate binary instead of `cargo build --release`
#   BENCH_SKIP_CURATE=1     skip the curate half
#   BENCH_SKIP_SNAKEMAKE=1  skip the Snakemake half
#   BENCH_SNAKEMAKE_SPEC    pip requirement for Snakemake (default "snakemake")
#
# Outputs: everything under target/bench-engine/; the table is printed and
# appended to target/bench-engine/results.md.
#
# Cost: Snakemake's half dominates. On the 2-core dev box (shared with a
# compile) 1000 items took ~50 s and 10000 items ~9 min (cold + re-run); use
# BENCH_SNAKEMAKE_ITEMS=1000 for a quick, per-task comparison.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
WORK="$ROOT/target/bench-engine"
VENV="$WORK/venv"

N=${BENCH_ITEMS:-10000}
SN=${BENCH_SNAKEMAKE_ITEMS:-$N}
SKIP_CURATE=${BENCH_SKIP_CURATE:-0}
SKIP_SMK=${BENCH_SKIP_SNAKEMAKE:-0}
SMK_SPEC=${BENCH_SNAKEMAKE_SPEC:-snakemake}

for v in N SN; do
  if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
    echo "engine.sh: item count must be a positive integer, got '${!v}'" >&2
    exit 2
  fi
done
if [[ ! -x /usr/bin/time ]]; then
  echo "engine.sh: GNU /usr/bin/time is required (apt-get install time)" >&2
  exit 2
fi

log() { printf '[bench] %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------
# Work dir: keep the venv and the results history, wipe all run state.
mkdir -p "$WORK"
find "$WORK" -mindepth 1 -maxdepth 1 ! -name venv ! -name results.md -exec rm -rf {} +

# item ids: item-00001 ... (width grows naturally past 99999)
item_ids() { awk -v n="$1" 'BEGIN { for (i = 1; i <= n; i++) printf "item-%05d\n", i }'; }

# ---------------------------------------------------------------------------
# measure NAME LOGFILE CMD...  (runs CMD in the current directory)
# Sets globals: M_WALL (seconds), M_CPU (user+sys s), M_RSS_MB, M_RC. Never fails the script.
measure() {
  local name=$1 logfile=$2
  shift 2
  local tfile="$WORK/$name.time" t0 t1 kb
  t0=$(date +%s.%N)
  set +e
  /usr/bin/time -v -o "$tfile" "$@" >"$logfile" 2>&1
  M_RC=$?
  set -e
  t1=$(date +%s.%N)
  M_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tfile")
  M_RSS_MB=$(awk -v k="${kb:-0}" 'BEGIN { printf "%.1f", k / 1024 }')
  # CPU seconds (user+sys): less sensitive than wall time to other load on the box
  M_CPU=$(awk -F': ' '/User time|System time/ { t += $2 } END { printf "%.2f", t }' "$tfile")
  log "$name: rc=$M_RC wall=${M_WALL}s cpu=${M_CPU}s peak_rss=${M_RSS_MB}MB load1=$(cut -d' ' -f1 /proc/loadavg) (log: ${logfile#"$ROOT"/})"
  if [[ $M_RC -ne 0 ]]; then
    log "$name: FAILED — last lines of its log:"
    tail -n 15 "$logfile" | sed 's/^/    /' >&2
  fi
}

# ---------------------------------------------------------------------------
# curate
CUR_STATUS=""          # empty = measured; otherwise the reason it was skipped
CUR_COLD="" CUR_COLD_RSS="" CUR_RERUN="" CUR_RERUN_RSS="" CUR_COLD_CPU="" CUR_RERUN_CPU=""

item_ids "$N" | awk '{ printf "{\"id\":\"%s\"}\n", $0 }' >"$WORK/items.jsonl"
cat >"$WORK/pipeline.yaml" <<'YAML'
name: bench-noop
source:
  kind: jsonl
  path: items.jsonl
stages:
  - id: s1
    kind: noop
  - id: s2
    kind: noop
    needs: [s1]
  - id: s3
    kind: noop
    needs: [s2]
  - id: s4
    kind: noop
    needs: [s3]
YAML

run_curate() {
  local bin
  if [[ $SKIP_CURATE == 1 ]]; then
    CUR_STATUS="skipped (BENCH_SKIP_CURATE=1)"
    return
  fi
  if [[ -n ${CURATE_BIN:-} ]]; then
    bin=$CURATE_BIN
    [[ $bin == /* ]] || bin="$ROOT/$bin"
    if [[ ! -x $bin ]]; then
      CUR_STATUS="skipped (CURATE_BIN=$CURATE_BIN is not an executable)"
      return
    fi
  else
    log "building curate: cargo build --release --quiet"
    if ! cargo build --release --quiet >"$WORK/cargo-build.log" 2>&1; then
      log "cargo build failed — last lines of target/bench-engine/cargo-build.log:"
      tail -n 15 "$WORK/cargo-build.log" | sed 's/^/    /' >&2
      CUR_STATUS="skipped (cargo build --release failed)"
      return
    fi
    bin="$ROOT/target/release/curate"
    if [[ ! -x $bin ]]; then
      CUR_STATUS="skipped (build produced no target/release/curate)"
      return
    fi
  fi
  if ! "$bin" run --help >/dev/null 2>&1; then
    CUR_STATUS="skipped (curate has no working \`run\` subcommand yet)"
    return
  fi

  log "curate: $N items, $((4 * N)) tasks"
  cd "$WORK"
  # cold: fresh state dir (the work dir was wiped above)
  measure curate-cold "$WORK/curate-cold.log" "$bin" run pipeline.yaml --state "$WORK/curate-state"
  if [[ $M_RC -ne 0 ]]; then
    CUR_STATUS="failed (cold run exit $M_RC, see target/bench-engine/curate-cold.log)"
    cd "$ROOT"
    return
  fi
  CUR_COLD=$M_WALL CUR_COLD_RSS=$M_RSS_MB CUR_COLD_CPU=$M_CPU
  # re-run: same state dir, nothing to do
  measure curate-rerun "$WORK/curate-rerun.log" "$bin" run pipeline.yaml --state "$WORK/curate-state"
  if [[ $M_RC -ne 0 ]]; then
    CUR_STATUS="failed (re-run exit $M_RC, see target/bench-engine/curate-rerun.log)"
    cd "$ROOT"
    return
  fi
  CUR_RERUN=$M_WALL CUR_RERUN_RSS=$M_RSS_MB CUR_RERUN_CPU=$M_CPU
  cd "$ROOT"
}

# ---------------------------------------------------------------------------
# Snakemake
SMK_STATUS="" SMK_VERSION=""
SMK_COLD="" SMK_COLD_RSS="" SMK_RERUN="" SMK_RERUN_RSS="" SMK_COLD_CPU="" SMK_RERUN_CPU=""

# Flags, and why:
#   --cores 2                  both cores, same as curate gets.
#   --quiet                    no per-job progress/rule lines (terminal/log I/O
#                              is not what we measure; curate's log goes to a file too).
#   --force-use-threads        the rules use `run:` blocks; without this flag the
#                              local executor spawns a whole new Python/Snakemake
#                              process for every `run:` job. With it, jobs run in
#                              Snakemake's thread pool, in-process — the closest
#                              match to curate's in-process no-op stage and
#                              the fastest option (a `shell: "touch {output}"`
#                              rule would fork bash once per job).
#   --scheduler greedy         the default ILP scheduler solves an LP for each
#                              scheduling round, which is slow on a large DAG
#                              and buys nothing here (all jobs are equal).
#   --scheduler-subsample 100  every scheduling round (one per finished job)
#                              validates, stats the inputs of and scores *every*
#                              ready job, so with N ready s1 jobs the run goes
#                              quadratic; this documented large-DAG knob makes a
#                              round look at 100 random ready jobs instead.
#   --scheduler-greedy-omit-prioritize-by-temp-and-input
#                              don't rank jobs by input/temp file sizes (all
#                              inputs are empty; curate does no such ranking).
#                              Measured with these two flags at 1000 items:
#                              30 CPU s instead of 43 CPU s; without them 10000
#                              items had done ~2000 of 40000 jobs after 20 min.
#   --rerun-triggers mtime     classic make-like up-to-date check; skips the
#                              code/params/input/software-env provenance checks,
#                              which curate's no-op re-run does not need either.
#   --nolock                   skip the working-dir lock (it stats/writes lock
#                              files over all inputs/outputs); only one instance runs.
#   no --use-conda / --sdm     no software deployment at all.
# Metadata (.snakemake/metadata) is kept: it is Snakemake's normal per-job
# bookkeeping, the counterpart of curate's state dir.
SMK_FLAGS=(--cores 2 --quiet --force-use-threads --scheduler greedy
           --scheduler-subsample 100 --scheduler-greedy-omit-prioritize-by-temp-and-input
           --rerun-triggers mtime --nolock)

ensure_snakemake() {
  if [[ ! -x $VENV/bin/snakemake ]] || ! "$VENV/bin/snakemake" --version >/dev/null 2>&1; then
    log "installing Snakemake into ${VENV#"$ROOT"/} (pip install $SMK_SPEC)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "$SMK_SPEC"
  fi
  SMK_VERSION=$("$VENV/bin/snakemake" --version)
  log "snakemake version: $SMK_VERSION"
}

run_snakemake() {
  if [[ $SKIP_SMK == 1 ]]; then
    SMK_STATUS="skipped (BENCH_SKIP_SNAKEMAKE=1)"
    return
  fi
  ensure_snakemake

  local d="$WORK/snakemake"
  mkdir -p "$d/in"
  cd "$d"
  # N empty input files, one per item (xargs batches the touches)
  item_ids "$SN" | sed 's|^|in/|' | xargs touch
  item_ids "$SN" >ids.txt

  cat >Snakefile <<'SMK'
# Generated by bench/engine.sh: 4 chained no-op rules over N items.
# Each job's work is trivial: a `run:` block that creates an empty file
# (executed in-process thanks to --force-use-threads, see engine.sh).
with open("ids.txt") as f:
    IDS = f.read().split()

wildcard_constraints:
    i=r"item-\d+"

rule all:
    input: expand("s4/{i}.done", i=IDS)

rule s1:
    input: "in/{i}"
    output: "s1/{i}.done"
    run:
        open(output[0], "w").close()

rule s2:
    input: "s1/{i}.done"
    output: "s2/{i}.done"
    run:
        open(output[0], "w").close()

rule s3:
    input: "s2/{i}.done"
    output: "s3/{i}.done"
    run:
        open(output[0], "w").close()

rule s4:
    input: "s3/{i}.done"
    output: "s4/{i}.done"
    run:
        open(output[0], "w").close()
SMK

  log "snakemake: $SN items, $((4 * SN)) tasks: snakemake ${SMK_FLAGS[*]}"
  measure snakemake-cold "$WORK/snakemake-cold.log" "$VENV/bin/snakemake" "${SMK_FLAGS[@]}"
  if [[ $M_RC -ne 0 ]]; then
    SMK_STATUS="failed (cold run exit $M_RC, see target/bench-engine/snakemake-cold.log)"
    cd "$ROOT"
    return
  fi
  local made
  made=$(find s4 -name '*.done' | wc -l)
  if [[ $made -ne $SN ]]; then
    SMK_STATUS="failed (cold run made $made of $SN s4 outputs)"
    cd "$ROOT"
    return
  fi
  SMK_COLD=$M_WALL SMK_COLD_RSS=$M_RSS_MB SMK_COLD_CPU=$M_CPU
  measure snakemake-rerun "$WORK/snakemake-rerun.log" "$VENV/bin/snakemake" "${SMK_FLAGS[@]}"
  if [[ $M_RC -ne 0 ]]; then
    SMK_STATUS="failed (re-run exit $M_RC, see target/bench-engine/snakemake-rerun.log)"
    cd "$ROOT"
    return
  fi
  SMK_RERUN=$M_WALL SMK_RERUN_RSS=$M_RSS_MB SMK_RERUN_CPU=$M_CPU
  cd "$ROOT"
}

run_curate
run_snakemake

# ---------------------------------------------------------------------------
# Report
per_task_ms() { awk -v s="$1" -v t="$2" 'BEGIN { printf "%.3f", 1000 * s / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "n/a" }'; }
per_task() { awk -v s="$1" -v t="$2" 'BEGIN { printf "%.9f", s / t }'; }
T_N=$((4 * N)) T_SN=$((4 * SN))

# columns: tool | items | tasks | cold wall s | re-run wall s | cold ms/task |
#          re-run ms/task | cold CPU s | re-run CPU s | RSS MB cold | RSS MB re-run
row() {  # row TOOL ITEMS COLD RERUN COLD_CPU RERUN_CPU COLD_RSS RERUN_RSS
  local t=$((4 * $2))
  echo "| $1 | $2 | $t | $3 | $4 | $(per_task_ms "$3" $t) | $(per_task_ms "$4" $t) | $5 | $6 | $7 | $8 |"
}
TABLE=$(
  echo "| tool | items | tasks | cold wall s | no-op re-run wall s | cold ms/task | re-run ms/task | cold CPU s | re-run CPU s | peak RSS MB cold | peak RSS MB re-run |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  if [[ -z $CUR_STATUS ]]; then
    row curate "$N" "$CUR_COLD" "$CUR_RERUN" "$CUR_COLD_CPU" "$CUR_RERUN_CPU" "$CUR_COLD_RSS" "$CUR_RERUN_RSS"
  else
    echo "| curate | $N | $((4 * N)) | $CUR_STATUS | | | | | | | |"
  fi
  if [[ -z $SMK_STATUS ]]; then
    row "snakemake $SMK_VERSION" "$SN" "$SMK_COLD" "$SMK_RERUN" "$SMK_COLD_CPU" "$SMK_RERUN_CPU" "$SMK_COLD_RSS" "$SMK_RERUN_RSS"
  else
    echo "| snakemake${SMK_VERSION:+ $SMK_VERSION} | $SN | $((4 * SN)) | $SMK_STATUS | | | | | | | |"
  fi
  if [[ -z $CUR_STATUS && -z $SMK_STATUS ]]; then
    if [[ $N -eq $SN ]]; then
      echo "| **ratio snakemake/curate** | | | $(ratio "$SMK_COLD" "$CUR_COLD") | $(ratio "$SMK_RERUN" "$CUR_RERUN") | | | $(ratio "$SMK_COLD_CPU" "$CUR_COLD_CPU") | $(ratio "$SMK_RERUN_CPU" "$CUR_RERUN_CPU") | $(ratio "$SMK_COLD_RSS" "$CUR_COLD_RSS") | $(ratio "$SMK_RERUN_RSS" "$CUR_RERUN_RSS") |"
    else
      # sizes differ: compare per task; RSS at unequal sizes is not comparable, so left out
      echo "| **ratio snakemake/curate, per task** | | | $(ratio "$(per_task "$SMK_COLD" $T_SN)" "$(per_task "$CUR_COLD" $T_N)") | $(ratio "$(per_task "$SMK_RERUN" $T_SN)" "$(per_task "$CUR_RERUN" $T_N)") | | | $(ratio "$(per_task "$SMK_COLD_CPU" $T_SN)" "$(per_task "$CUR_COLD_CPU" $T_N)") | $(ratio "$(per_task "$SMK_RERUN_CPU" $T_SN)" "$(per_task "$CUR_RERUN_CPU" $T_N)") | | |"
    fi
  fi
)

NOTE=""
if [[ $N -ne $SN ]]; then
  NOTE="Sizes differ: curate ran $N items ($((4 * N)) tasks), Snakemake ran $SN items ($((4 * SN)) tasks); time ratios are per task, RSS is not comparable."
fi

HEADER="## $(date -u '+%Y-%m-%d %H:%M:%S UTC') — $(uname -m), nproc $(nproc)"
REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")

echo
echo "$HEADER"
echo
echo "$TABLE"
if [[ -n $NOTE ]]; then echo; echo "$NOTE"; fi

{
  echo "$HEADER"
  echo
  echo "curate rev: $REV. Snakemake flags: \`${SMK_FLAGS[*]}\` (run: blocks). Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "$TABLE"
  if [[ -n $NOTE ]]; then echo; echo "$NOTE"; fi
  echo
} >>"$WORK/results.md"
log "appended to target/bench-engine/results.md"
