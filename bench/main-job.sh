#!/usr/bin/env bash
# Wall time of the main job (pipelines/ccrab.yaml on the bundled sample, model answers replayed
# from cache/llm), cold and warm:
#   cold: the sample's environment images removed (the base and tools layers kept), empty state;
#   warm: images present, empty state (every task runs again, no image is rebuilt);
#   rerun: the same state again (nothing to do).
# Prints one line per case (wall time, containers started) and the funnel once.
#
# Usage, from the repository root:  bash bench/main-job.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo build --release --quiet
python3 sample/build.py --out cache/mirrors >/dev/null 2>&1
scripts/base-image

work=target/bench-main-job
rm -rf "$work"
mkdir -p "$work"
export CURATE_LLM_CACHE=replay

run() { # label state-dir
    local t0=$SECONDS
    # Containers started during the run, counted from the daemon's events.
    docker events --filter type=container --filter event=start --format '{{.ID}}' >"$work/$1.events" &
    local events=$!
    target/release/curate run pipelines/ccrab.yaml --state "$2" --progress quiet >"$work/$1.log" 2>&1
    local seconds=$((SECONDS - t0))
    sleep 1
    kill "$events"
    echo "$1: $seconds s, $(wc -l <"$work/$1.events") containers"
}

for layer in env deps; do
    docker images --format '{{.Repository}}:{{.Tag}}' | { grep -E "^curate-$layer/curate-sample" || true; } | xargs -r docker rmi -f >/dev/null
done
docker image prune -f >/dev/null

run cold "$work/cold"
run warm "$work/warm"
run rerun "$work/warm"
target/release/curate report pipelines/ccrab.yaml --state "$work/warm" | sed -n '/^| Stage/,/^$/p'
