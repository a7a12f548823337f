#!/usr/bin/env bash
# Holds N idle WebSockets against the demo target for HOLD seconds, while one user
# changes a note every second (2 pushes per socket per second), and prints one Markdown
# table row per N: host RSS per socket, pushes delivered vs expected, CPU of host and
# target.
#
#   bench/websockets.sh [N ...]        (default: 10000; N must be a multiple of 20)
#   HOLD=60 PORT=18080 bench/websockets.sh 10000 18000
#
# The target (`host target`) runs on core 0 and the host on core 1 (taskset). Each N is
# run twice: once with 0 tabs per user (the VUs alone: the baseline RSS) and once with
# 20 tabs per user; RSS per socket = (peak RSS with sockets - baseline peak) / N.
# Needs: a release build (made here unless HOST=path names one; PLUGIN=path for another
# sockets.wasm), jq, curl, /usr/bin/time, taskset.
set -euo pipefail
cd "$(dirname "$0")/.."

HOLD=${HOLD:-60}
PORT=${PORT:-18080}
TABS=20
COUNTS=("${@:-10000}")
ulimit -n "$(ulimit -Hn)"

if [ -z "${HOST:-}" ]; then
    cargo build --release -p host >&2
    HOST=target/release/host
fi
PLUGIN=${PLUGIN:-plugins/target/wasm32-wasip2/release/sockets.wasm}
WORK=$(mktemp -d)
BASE="http://127.0.0.1:$PORT"

# shellcheck source=bench/ws-common.sh
. bench/ws-common.sh
TARGET_RUN=(taskset -c 0)
trap stop_target EXIT
rss_mib() { awk '/^VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

# run NAME TABS LISTEN_S WRITER(0|1) VUS: runs the host; leaves NAME.json, .time, .peak.
run() {
    local name=$1 tabs=$2 listen_s=$3 writer=$4 vus=$5
    local config="$WORK/$name.toml"
    cat >"$config" <<EOF
[scenarios.listeners]
executor = "constant-vus"
vus = $vus
duration = "${listen_s}s"
exec = "listeners"
EOF
    if [ "$writer" = 1 ]; then
        cat >>"$config" <<EOF

[scenarios.writer]
executor = "constant-vus"
vus = 1
start_time = "15s"
duration = "$((listen_s - 20))s"
exec = "writer"
EOF
    fi
    cat >>"$config" <<EOF

[env]
BASE_URL = "$BASE"
TABS = "$tabs"
DRAIN_MS = "1000"
POLL_MS = "250"

[websocket]
ping_interval = "20s"
EOF
    rm -rf "$WORK/out-$name"
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/$name.time" \
        taskset -c 1 "$HOST" run "$PLUGIN" --config "$config" --out "$WORK/out-$name" --quiet \
        >"$WORK/$name.log" 2>&1 &
    local pid=$!
    # Sample the hold phase: the most sockets the target saw open, and its RSS then.
    local open=0 peak_open=0 target_rss=0
    while kill -0 "$pid" 2>/dev/null; do
        open=$(metric demo_ws_open || echo 0)
        if [ "${open:-0}" -gt "$peak_open" ]; then
            peak_open=$open
            target_rss=$(rss_mib "$TARGET")
        fi
        sleep 1
    done
    wait "$pid" || echo "warning: host exited with $? (see $WORK/$name.log)" >&2
    echo "$peak_open $target_rss" >"$WORK/$name.peak"
    cp "$(ls -d "$WORK/out-$name"/*/ | head -1)/summary.json" "$WORK/$name.json"
}

echo "| sockets | held | connect p95 | host peak RSS | RSS per socket (host) | target RSS per socket | pushes delivered / expected | ws errors | host CPU (avg cores) | target CPU (avg cores) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in "${COUNTS[@]}"; do
    vus=$((n / TABS))
    listen_s=$((HOLD + 20))
    start_target
    # Baseline: the same VUs, signed in, holding no socket.
    run "base-$n" 0 20 0 "$vus"
    base_rss=$(awk '{ print $4 }' "$WORK/base-$n.time")
    target_idle=$(rss_mib "$TARGET")
    target_cpu0=$(cpu_seconds "$TARGET")
    run "ws-$n" "$TABS" "$listen_s" 1 "$vus"
    target_cpu=$(echo "$(cpu_seconds "$TARGET") - $target_cpu0" | bc -l)
    read -r wall user sys peak_rss <"$WORK/ws-$n.time"
    read -r peak_open target_rss <"$WORK/ws-$n.peak"
    ws_figures "$WORK/ws-$n.json"
    printf '| %s (%s opened, %s at once) | %ss | %.1f ms | %.0f MiB | %.1f KiB | %.1f KiB | %s / %s | %s | %.2f | %.2f |\n' \
        "$n" "$sessions" "$peak_open" "$HOLD" "$connect_p95" "$(echo "$peak_rss / 1024" | bc -l)" \
        "$(echo "($peak_rss - $base_rss) / $n" | bc -l)" \
        "$(echo "($target_rss - $target_idle) * 1024 / $n" | bc -l)" \
        "$received" "$expected" "$errors" \
        "$(echo "($user + $sys) / $wall" | bc -l)" "$(echo "$target_cpu / $wall" | bc -l)"
done
echo "work files: $WORK" >&2
