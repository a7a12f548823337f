#!/usr/bin/env bash
# The starter over REST and over gRPC side by side: one demo target (REST and its gRPC
# face, --grpc-listen) on core 0, the host on core 1 running plugin `starter` at its
# default shape (constant-arrival-rate 50/s, at most 100 in flight) for DURATION with
# FACE=rest, then FACE=grpc; prints instances per second, instance_duration p95 and the
# host's CPU (user + system, /usr/bin/time) for each.
#
#   HOST=target/debug/host DEMO=target/debug/demo-target bench/starter-faces/run.sh
#
# Needs: HOST and DEMO binaries, the starter plugin built (host/build.rs builds it),
# /usr/bin/time, taskset, jq.
set -euo pipefail
cd "$(dirname "$0")/../.."
HOST=${HOST:-target/release/host}
DEMO=${DEMO:-target/release/demo-target}
DURATION=${DURATION:-20s}
PLUGIN=plugins/target/wasm32-wasip2/release/starter.wasm
WORK=$(mktemp -d)

taskset -c 0 "$DEMO" --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 >"$WORK/demo.out" 2>&1 &
DEMO_PID=$!
trap 'kill $DEMO_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    grep -q 'listening on http' "$WORK/demo.out" 2>/dev/null && break
    sleep 0.1
done
GRPC=$(sed -n 's/^demo target listening on gRPC .* \([0-9.:]*\) too$/\1/p' "$WORK/demo.out")
BASE=$(sed -n 's/^demo target listening on \(http:.*\)$/\1/p' "$WORK/demo.out")

echo "| face | instances sent / received | instances/s | instance_duration p50 / p95 ms | host CPU s | host CPU % of a core |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for face in rest grpc; do
    /usr/bin/time -f '%U %S %e' -o "$WORK/$face.time" taskset -c 1 "$HOST" run "$PLUGIN" \
        --duration "$DURATION" -e BASE_URL="$BASE" -e GRPC_TARGET="$GRPC" -e FACE="$face" \
        --out "$WORK/out-$face" --quiet >"$WORK/$face.log" 2>&1 || true
    summary=$(ls "$WORK"/out-"$face"/*/summary.json)
    read -r sent received p50 p95 < <(jq -r '[.metrics.instances_sent.count, .metrics.instances_received.count,
        .metrics.instance_duration.med, .metrics.instance_duration.p95] | @tsv' "$summary")
    read -r user sys wall <"$WORK/$face.time"
    secs=${DURATION%s}
    printf "| %s | %d / %d | %.1f | %.1f / %.1f | %.2f | %.0f |\n" "$face" "$sent" "$received" \
        "$(echo "$received / $secs" | bc -l)" "$p50" "$p95" "$(echo "$user + $sys" | bc -l)" \
        "$(echo "($user + $sys) / $wall * 100" | bc -l)"
done
