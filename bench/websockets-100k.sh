#!/usr/bin/env bash
# Holds N live WebSockets from this one machine: the sockets are spread over several
# local `host worker` processes (one distributed run, one coordinator) and several demo
# targets, because a process may have at most 20,000 open files here (`ulimit -Hn`, not
# raisable) and each socket is a descriptor at both ends. Every socket is subscribed to
# group 1 of its target; one writer changes a note in every target every WRITE_MS, and
# every push is counted: pushes_received (the tabs' drains) against pushes_expected
# (the targets' X-Live-Recipients). Prints one Markdown table row per N.
#
#   bench/websockets-100k.sh [N ...]           (default: 20000; N a multiple of 20)
#   HOLD=60 PER_PROCESS=15000 bench/websockets-100k.sh 20000 50000 100000
#
# For each N: W = ceil(N / PER_PROCESS) workers and as many targets, target i listening
# on 127.0.0.(11+i):PORT (listener VU id goes to target (id-1) % W). Each N runs twice
# with the same cluster shape: a baseline (the same VUs signed in, 0 tabs) and the run
# with 20 tabs per VU. RSS per socket = (sum over workers of peak RSS with sockets - sum
# of their baseline peaks) / N (`/usr/bin/time`, max RSS; kernel socket buffers are not
# RSS). LOCAL_IPS (default 127.0.1.1-127.0.1.10) is the workers' `[http] local_ips`:
# each VU's connections leave from one of them, so no source address needs more than
# N/10 of the 28,232 ephemeral ports (a bound source port is the address's, whatever
# the destination); LOCAL_IPS= (empty) leaves the kernel's default source.
#
# Every process is bounded by `timeout`, and the script kills what it started on exit.
# Needs: a release build (HOST=path, default target/release/host), the sockets plugin
# (PLUGIN=path), jq, curl, /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."

HOLD=${HOLD:-60}              # seconds the writer writes
PER_PROCESS=${PER_PROCESS:-15000}
PORT=${PORT:-18080}
COORD=${COORD:-127.0.0.1:17878}
WRITE_MS=${WRITE_MS:-5000}    # one note change per target per WRITE_MS (2 pushes each)
DRAIN_MS=${DRAIN_MS:-5000}    # a listener iteration
POLL_MS=${POLL_MS:-5000}      # pause between two passes over a listener's 20 sockets
PING=${PING:-20s}             # [websocket] ping_interval of the host
LOCAL_IPS=${LOCAL_IPS-127.0.1.1-127.0.1.10}
HOST=${HOST:-target/release/host}
PLUGIN=${PLUGIN:-plugins/target/wasm32-wasip2/release/sockets.wasm}
TABS=20
COUNTS=("${@:-20000}")
ulimit -n "$(ulimit -Hn)"

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    PIDS=()
}
trap cleanup EXIT

TARGET_PIDS=()
TARGET_URLS=()
start_targets() { # start_targets W: fresh targets, so their RSS before is their idle RSS
    TARGET_PIDS=()
    TARGET_URLS=()
    for i in $(seq 0 $(($1 - 1))); do
        local addr="127.0.0.$((11 + i)):$PORT"
        timeout 3600 "$HOST" target --listen "$addr" >"$WORK/target-$i.log" 2>&1 &
        PIDS+=($!)
        TARGET_URLS+=("http://$addr")
    done
    for url in "${TARGET_URLS[@]}"; do
        for _ in $(seq 100); do
            curl -fs "$url/health" >/dev/null && continue 2
            sleep 0.1
        done
        echo "a target did not start (see $WORK/target-*.log)" >&2
        exit 1
    done
    # The targets themselves (for RSS and CPU), not the `timeout` above each.
    for pid in "${PIDS[@]}"; do
        TARGET_PIDS+=("$(pgrep -P "$pid")")
    done
}

# shellcheck source=bench/ws-common.sh
. bench/ws-common.sh
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
sum_targets() { # sum_targets FUNCTION: FUNCTION's output summed over the targets
    local total=0
    for pid in "${TARGET_PIDS[@]}"; do total=$(echo "$total + $($1 "$pid")" | bc -l); done
    echo "$total"
}
ws_open() { # sockets the targets hold now
    local total=0
    for url in "${TARGET_URLS[@]}"; do
        local n
        n=$(curl -fs "$url/metrics" | awk '$1 == "demo_ws_open" { print $2 }')
        total=$((total + ${n:-0}))
    done
    echo "$total"
}

# run NAME TABS WORKERS VUS: one distributed run; leaves NAME.json (merged summary),
# NAME.w<i>.time (each worker's wall, user, sys, max RSS KiB) and NAME.peak.
run() {
    local name=$1 tabs=$2 workers=$3 vus=$4
    local ramp=$((15 + vus * TABS / 2000)) # connect phase: about 2,000 sockets a second
    local listen_s=$((ramp + HOLD + 15))
    [ "$tabs" = 0 ] && listen_s=30 # the baseline: VUs signed in, nothing else
    local config="$WORK/$name.toml"
    local targets
    targets=$(IFS=,; echo "${TARGET_URLS[*]}")
    cat >"$config" <<EOF
[scenarios.listeners]
executor = "constant-vus"
vus = $vus
duration = "${listen_s}s"
exec = "listeners"
EOF
    if [ "$tabs" != 0 ]; then
        cat >>"$config" <<EOF

[scenarios.writer]
executor = "constant-vus"
vus = 1
start_time = "${ramp}s"
duration = "${HOLD}s"
exec = "writer"
EOF
    fi
    cat >>"$config" <<EOF

[env]
TARGETS = "$targets"
TABS = "$tabs"
DRAIN_MS = "$DRAIN_MS"
POLL_MS = "$POLL_MS"
WRITE_MS = "$WRITE_MS"

[websocket]
ping_interval = "$PING"
EOF
    if [ -n "$LOCAL_IPS" ]; then
        printf '\n[http]\nlocal_ips = ["%s"]\n' "$LOCAL_IPS" >>"$config"
    fi
    rm -rf "$WORK/out-$name"
    local bound=$((listen_s + 300))
    timeout "$bound" "$HOST" coordinate "$PLUGIN" --workers "$workers" --listen "$COORD" \
        --config "$config" --out "$WORK/out-$name" --quiet >"$WORK/$name.log" 2>&1 &
    local coordinator=$!
    PIDS+=($coordinator)
    for _ in $(seq 100); do
        grep -q "coordinator listening" "$WORK/$name.log" 2>/dev/null && break
        sleep 0.1
    done
    local worker_pids=()
    for i in $(seq 0 $((workers - 1))); do
        /usr/bin/time -f '%e %U %S %M' -o "$WORK/$name.w$i.time" \
            timeout "$bound" "$HOST" worker --coordinator "$COORD" --name "w$i" \
            --out "$WORK/out-$name-w$i" >"$WORK/$name.w$i.log" 2>&1 &
        PIDS+=($!)
        worker_pids+=($!)
    done
    # Sample the hold: the most sockets the targets held at once, and their RSS then.
    local open peak_open=0 target_rss=0
    while kill -0 "$coordinator" 2>/dev/null; do
        open=$(ws_open)
        if [ "$open" -gt "$peak_open" ]; then
            peak_open=$open
            target_rss=$(sum_targets rss_kib)
        fi
        sleep 2
    done
    wait "$coordinator" || echo "warning: coordinator exited with $? (see $WORK/$name.log)" >&2
    for pid in "${worker_pids[@]}"; do
        wait "$pid" || echo "warning: a worker exited with $? (see $WORK/$name.w*.log)" >&2
    done
    echo "$peak_open $target_rss" >"$WORK/$name.peak"
    cp "$(ls -d "$WORK/out-$name"/*/ | head -1)/summary.json" "$WORK/$name.json"
}

sum_col() { cat "$@" | awk -v c="$COL" '{ s += $c } END { print s }'; }

echo "| sockets | workers × sockets | targets held at once | connect p95 | host peak RSS (sum) | RSS per socket (host) | target RSS per socket | pushes received / expected | ws errors | host CPU (avg cores) | target CPU (avg cores) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in "${COUNTS[@]}"; do
    vus=$((n / TABS))
    workers=$(((n + PER_PROCESS - 1) / PER_PROCESS))
    start_targets "$workers"
    run "base-$n" 0 "$workers" "$vus"
    target_idle=$(sum_targets rss_kib)
    target_cpu0=$(sum_targets cpu_seconds)
    run "ws-$n" "$TABS" "$workers" "$vus"
    target_cpu=$(echo "$(sum_targets cpu_seconds) - $target_cpu0" | bc -l)
    cleanup
    base_rss=$(COL=4 sum_col "$WORK"/base-$n.w*.time)
    peak_rss=$(COL=4 sum_col "$WORK"/ws-$n.w*.time)
    user=$(COL=2 sum_col "$WORK"/ws-$n.w*.time)
    sys=$(COL=3 sum_col "$WORK"/ws-$n.w*.time)
    wall=$(awk '{ print $1 }' "$WORK/ws-$n.w0.time")
    read -r peak_open target_rss <"$WORK/ws-$n.peak"
    ws_figures "$WORK/ws-$n.json"
    printf '| %s (%s opened) | %s × %s | %s | %.1f ms | %.0f MiB | %.2f KiB | %.2f KiB | %s / %s | %s | %.2f | %.2f |\n' \
        "$n" "$sessions" "$workers" "$((n / workers))" "$peak_open" "$connect_p95" \
        "$(echo "$peak_rss / 1024" | bc -l)" "$(echo "($peak_rss - $base_rss) / $n" | bc -l)" \
        "$(echo "($target_rss - $target_idle) / $n" | bc -l)" \
        "$received" "$expected" "$errors" \
        "$(echo "($user + $sys) / $wall" | bc -l)" "$(echo "$target_cpu / $wall" | bc -l)"
done
echo "work files: $WORK" >&2
