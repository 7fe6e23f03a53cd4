#!/usr/bin/env bash
# The real-world development set up to the environment stage: the funnel of pipelines/real.yaml,
# each PR's environment time cold (no dependency images of its repository) and warm (images there,
# fresh state), and every rejection with its reason.
#
# Needs git mirrors of the set's repositories; scripts/real-dataset lists the missing ones (fetch
# them with the search tool's fetch, or clone them where GitHub answers). The mirror template is
# CURATE_REAL_MIRRORS (default /work/.mirror/{owner}+{name}/repo).
#
# Usage, from the repository root:  bash bench/real-prs.sh     (BENCH_WARM=0 skips the warm run)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CURATE_REAL_MIRRORS=${CURATE_REAL_MIRRORS:-/work/.mirror/\{owner\}+\{name\}/repo}
export CURATE_REPOS_URL=$CURATE_REAL_MIRRORS

if ! python3 scripts/real-dataset; then
    echo "(continuing with the PRs whose mirrors are here)" >&2
fi
cargo build --release --quiet
scripts/base-image
# The repair step asks the local model (scripts/model-server; built once per machine, ~15 min).
scripts/model-server start >/dev/null

work=target/bench-real
rm -rf "$work"
mkdir -p "$work"
repos=$(python3 -c 'import json; print(" ".join(sorted({json.loads(l)["repo"].replace("/", "_").lower() for l in open("cache/real/swe-care.jsonl") if l.strip()})))')
# Dependency layers are named after the repository (owner_name), instance layers after the
# instance (owner__name-N).
for r in $repos; do
    instance=${r/_/__}
    docker images --format '{{.Repository}}:{{.Tag}}' | { grep -iE "^curate-(deps/$r|env/$instance-)" || true; } | xargs -r docker rmi -f >/dev/null
done
docker image prune -f >/dev/null

report() {
    python3 - "$1" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT item, state, output, message, duration_ms FROM tasks WHERE stage = 'environment' ORDER BY item").fetchall()
print("| PR | result | Python | s | deps s | verify s | repairs | reason |")
print("|---|---|---|---:|---:|---:|---:|---|")
for item, state, out, msg, ms in rows:
    o = json.loads(out) if out else {}
    s = o.get("seconds", {}) if isinstance(o, dict) else {}
    # A kept record lists its repairs; a rejected one every attempt, the last being the failure.
    repairs = len(o.get("repairs", [])) if state == "kept" else max(len(o.get("attempts", [])) - 1, 0)
    tried = [a.get("fix") or {} for a in o.get("repairs", o.get("attempts", []))]
    kinds = ",".join(f.get("kind", "?") for f in tried if f)
    python = o.get("python") or "/".join(dict.fromkeys(a.get("python", "") for a in o.get("attempts", [])))
    reason = (msg or "").replace("|", "\\|")[:160]
    print(f"| {item} | {state} | {python} | {(ms or 0) / 1000:.1f} | {s.get('deps', 0):.1f} | {s.get('verify', 0):.1f} | {repairs} {kinds} | {reason} |")
PY
}

for run in cold warm; do
    [ "$run" = warm ] && [ "${BENCH_WARM:-1}" = 0 ] && break
    start=$(date +%s)
    target/release/curate run pipelines/real.yaml --state "$work/$run" --progress quiet >/dev/null || true
    end=$(date +%s)
    echo
    echo "## $run run: $((end - start)) s"
    echo
    target/release/curate report pipelines/real.yaml --state "$work/$run" | sed -n '/^| Stage/,/^$/p'
    report "$work/$run/state.db"
done
