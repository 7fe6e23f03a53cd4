#!/usr/bin/env bash
# Several Docker hosts (issue 15): this machine's daemon and a second one this script starts (its
# own socket, data and exec roots under a temporary directory; removed at the end). Both are on
# this machine and share its 2 cores, so the figures show the executor's overhead, not a speed-up.
#   1. The main job (pipelines/ccrab.yaml on the sample, model answers replayed), cold (the sample's
#      environment images removed, empty state) and warm (images present, empty state), on one
#      daemon and on two (1 run slot each, 2 tasks at once).
#   2. `cargo bench --bench hosts`: placement overhead per run, and N runs of a 1-second command
#      over one host with 2 slots and two hosts with 2 slots each (CURATE_BENCH_RUNS, default 400).
#
# Usage, from the repository root:  bash bench/hosts.sh [registry]
# (`registry`: only the cold run over two daemons and a registry, and its report against one daemon's)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo build --release --quiet
python3 sample/build.py --out cache/mirrors >/dev/null 2>&1
scripts/base-image

work=target/bench-hosts
rm -rf "$work"
mkdir -p "$work"
export CURATE_LLM_CACHE=replay

dir=$(mktemp -d /tmp/cdb-XXXX)
cleanup() {
    [ -f "$dir/pid" ] && kill -9 "$(cat "$dir/pid")" 2>/dev/null || true
    pgrep -f "$dir" | xargs -r kill -9 2>/dev/null || true
    grep -o " $dir[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    rm -rf "$dir"
    ip link del "$bridge" 2>/dev/null || true
}
trap cleanup EXIT
# A bridge of its own: with `--bridge none` dockerd deletes docker0, which this machine's daemon needs.
bridge=cdb$$
ip link add "$bridge" type bridge && ip addr add 10.232.0.1/24 dev "$bridge" && ip link set "$bridge" up
echo '{}' >"$dir/config.json"
dockerd --config-file "$dir/config.json" --host "unix://$dir/docker.sock" --data-root "$dir/data" \
    --exec-root "$dir/exec" --pidfile "$dir/pid" --bridge "$bridge" --iptables=false --ip-masq=false \
    --storage-driver fuse-overlayfs >"$dir/dockerd.log" 2>&1 &
for _ in $(seq 100); do docker -H "unix://$dir/docker.sock" version >/dev/null 2>&1 && break; sleep 0.3; done
second="unix://$dir/docker.sock"
local_host=unix:///var/run/docker.sock

run() { # label name hosts
    local t0=$SECONDS
    CURATE_DOCKER_HOSTS=$3 target/release/curate run pipelines/ccrab.yaml --state "$work/$2" \
        --concurrency docker=2 --progress quiet >"$work/$2.log" 2>&1
    echo "$1: $((SECONDS - t0)) s"
}
drop_images() {
    for layer in env deps; do
        docker images --format '{{.Repository}}:{{.Tag}}' | { grep -E "^curate-$layer/curate-sample" || true; } | xargs -r docker rmi -f >/dev/null
    done
    docker image prune -f >/dev/null
}

only=${1:-all}
if [ "$only" = all ]; then
    drop_images
    run "one daemon, cold" one-cold "$local_host"
fi
run "one daemon, warm" one-warm "$local_host"
if [ "$only" = all ]; then
    drop_images
    run "two daemons, cold" two-cold "$local_host=1,$second=1"
    run "two daemons, warm" two-warm "$local_host=1,$second=1"
    sed -n '/^Docker hosts/,$p' "$work/two-warm.log"
fi
# With a registry (Debian's docker-registry, on a port of its own), builds spread over both.
if command -v docker-registry >/dev/null; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf 'version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
        "$dir/registry" "$port" >"$dir/registry.yml"
    docker-registry serve "$dir/registry.yml" >"$dir/registry.log" 2>&1 &
    echo $! >"$dir/registry.pid"
    sleep 2
    drop_images
    docker -H "$second" images -q | xargs -r docker -H "$second" rmi -f >/dev/null 2>&1 || true
    CURATE_DOCKER_REGISTRY=127.0.0.1:$port run "two daemons and a registry, cold" two-registry "$local_host=1,$second=1"
    sed -n '/^Docker hosts/,$p' "$work/two-registry.log"
    kill "$(cat "$dir/registry.pid")" 2>/dev/null || true
fi
for s in one-cold one-warm two-cold two-warm two-registry; do
    [ -d "$work/$s" ] || continue
    target/release/curate report pipelines/ccrab.yaml --state "$work/$s" >"$work/$s.md"
done
for s in one-cold two-cold two-warm two-registry; do
    [ -f "$work/$s.md" ] || continue
    cmp -s "$work/one-warm.md" "$work/$s.md" && echo "report of $s: the same as one daemon, warm" \
        || echo "report of $s: DIFFERS from one daemon, warm"
done

if [ "$only" = all ]; then
    CURATE_BENCH_SECOND_HOST=$second cargo bench --quiet --bench hosts
fi
