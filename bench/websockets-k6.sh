#!/usr/bin/env bash
# k6 beside bench/websockets.sh: the same scenario (bench/websockets-k6/sockets.js, N/20
# listener VUs × 20 sockets to the demo target's `GET /ws`, one writer changing a note
# every WRITE_MS) in one k6 process, which has the same 20,000 open files as any
# process here. Prints one Markdown row per N: k6's RSS per socket (peak RSS with
# sockets − peak RSS of the same VUs with 0 sockets, ÷ N), pushes received / expected,
# the target's peak open sockets, CPU.
#
#   K6=/opt/k6venv/bin/k6 HOLD=60 bench/websockets-k6.sh 10000 19000 20000
#
# The target is `host target` (HOST=path, default target/release/host), fresh per N.
# Every k6 run is bounded by `timeout`; the script stops the target on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

K6=${K6:-/opt/k6venv/bin/k6}
HOST=${HOST:-target/release/host}
HOLD=${HOLD:-60}
WRITE_MS=${WRITE_MS:-1000}
PORT=${PORT:-18090}
BASE="http://127.0.0.1:$PORT"
TABS=20
COUNTS=("${@:-10000}")
ulimit -n "$(ulimit -Hn)"
WORK=$(mktemp -d)

# shellcheck source=bench/ws-common.sh
. bench/ws-common.sh
TARGET_RUN=(timeout 3600)
trap stop_target EXIT

# run NAME TABS VUS RAMP_S HOLD_S: one k6 run; NAME.json (summary export), NAME.time, NAME.peak
run() {
    local name=$1 tabs=$2 vus=$3 ramp=$4 hold=$5
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/$name.time" \
        timeout $((ramp + hold + 120)) "$K6" run --quiet --no-usage-report \
        --summary-export "$WORK/$name.json" \
        -e BASE_URL="$BASE" -e VUS="$vus" -e TABS="$tabs" -e RAMP_S="$ramp" \
        -e HOLD_S="$hold" -e WRITE_MS="$WRITE_MS" \
        bench/websockets-k6/sockets.js >"$WORK/$name.log" 2>&1 &
    local pid=$! open peak_open=0
    while kill -0 "$pid" 2>/dev/null; do
        open=$(metric demo_ws_open || echo 0)
        [ "${open:-0}" -gt "$peak_open" ] && peak_open=$open
        sleep 1
    done
    wait "$pid" || echo "warning: k6 exited with $? (see $WORK/$name.log)" >&2
    echo "$peak_open" >"$WORK/$name.peak"
}
count() { jq "(.metrics.\"$2\".count // 0)" "$WORK/$1.json" 2>/dev/null || echo 0; }

echo "| sockets | target held at once | k6 peak RSS | RSS per socket (k6) | pushes received / expected | socket errors | k6 CPU (avg cores) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in "${COUNTS[@]}"; do
    vus=$((n / TABS))
    ramp=$((15 + n / 1000))
    start_target
    run "base-$n" 0 "$vus" 5 10
    run "ws-$n" "$TABS" "$vus" "$ramp" "$HOLD"
    base_rss=$(awk '{ print $4 }' "$WORK/base-$n.time")
    read -r wall user sys peak_rss <"$WORK/ws-$n.time"
    printf '| %s (%s opened) | %s | %.0f MiB | %.1f KiB | %s / %s | %s | %.2f |\n' \
        "$n" "$(count "ws-$n" tabs_opened)" "$(cat "$WORK/ws-$n.peak")" \
        "$(echo "$peak_rss / 1024" | bc -l)" "$(echo "($peak_rss - $base_rss) / $n" | bc -l)" \
        "$(count "ws-$n" pushes_received)" "$(count "ws-$n" pushes_expected)" \
        "$(count "ws-$n" tab_errors)" "$(echo "($user + $sys) / $wall" | bc -l)"
done
stop_target
echo "work files: $WORK" >&2
