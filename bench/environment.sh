#!/usr/bin/env bash
# Cold and warm environment builds on the bundled sample. Removes the sample's dependency and
# instance images (keeping the base and tools layers), runs the `environment` stage over the first
# BENCH_PRS pull requests (default 4: two PRs each of two repositories) and prints, per PR, the
# seconds of each layer and whether the dependency layer was reused.
#
# Usage, from the repository root:  bash bench/environment.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${BENCH_PRS:-4}

cargo build --release --quiet
python3 sample/build.py --out cache/mirrors >/dev/null 2>&1
scripts/base-image

work=target/bench-environment
rm -rf "$work"
mkdir -p "$work"
# Instances first: a dependency image with child images cannot be removed.
for layer in env deps; do
    docker images --format '{{.Repository}}:{{.Tag}}' | { grep -E "^curate-$layer/curate-sample" || true; } | xargs -r docker rmi -f >/dev/null
done
# Dangling intermediate images would let the classic builder skip the "cold" dependency steps.
docker image prune -f >/dev/null

cat > "$work/p.yaml" <<'YAML'
name: bench-environment
source: {kind: swe-care, path: ../../sample/swe-care.jsonl}
defaults:
  cache: ../../cache
  repos: {url: "../../cache/mirrors/{repo}.git"}
  concurrency: {docker: 1}
stages:
  - id: environment
    kind: environment
YAML

target/release/curate run "$work/p.yaml" --limit "$N" --progress quiet >/dev/null
python3 - "$work/.curate/bench-environment/state.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("| PR | total s | deps s | instance s | verify s | dependency layer | instance layer |")
print("|---|---:|---:|---:|---:|---|---|")
totals = {}
for item, out, ms in db.execute("SELECT item, output, duration_ms FROM tasks WHERE state = 'kept' ORDER BY finished_at"):
    o = json.loads(out)
    s = o["seconds"]
    reused = "reused" if o["deps_reused"] else "built"
    layer = "baked: " + o["instance_layer"] if o.get("instance_layer") else "none (runs bring the tree)"
    built = s["deps"] + s["instance"]
    totals.setdefault(reused, []).append((built, built + s["verify"]))
    print(f"| {item} | {ms / 1000:.1f} | {s['deps']:.1f} | {s['instance']:.1f} | {s['verify']:.1f} | {reused} | {layer} |")
if "built" in totals and "reused" in totals:
    mean = lambda xs: sum(xs) / len(xs)
    cold_b, cold_t = mean([b for b, _ in totals["built"]]), mean([t for _, t in totals["built"]])
    warm_b, warm_t = mean([b for b, _ in totals["reused"]]), mean([t for _, t in totals["reused"]])
    print()
    print(f"layers built: warm {warm_b:.2f} s / cold {cold_b:.2f} s = {100 * warm_b / cold_b:.0f}%")
    print(f"with verification: warm {warm_t:.2f} s / cold {cold_t:.2f} s = {100 * warm_t / cold_t:.0f}%")
PY
