# Shared by the WebSocket benchmarks (websockets.sh, websockets-100k.sh,
# websockets-k6.sh): sourced, not run. What each measures differs; how a process's CPU,
# a target's metric and a host run's socket figures are read does not, nor how the
# single-target ones start and stop their target.

# start_target: a fresh `$HOST target` on $PORT (so its RSS before a run is its idle
# RSS), run under the command in the array TARGET_RUN if set (taskset, timeout); logs
# to $WORK/target.log. Needs HOST, PORT, BASE and WORK. stop_target stops it.
TARGET=
start_target() {
    stop_target
    "${TARGET_RUN[@]}" "$HOST" target --listen "127.0.0.1:$PORT" >"$WORK/target.log" 2>&1 &
    TARGET=$!
    for _ in $(seq 100); do
        curl -fs "$BASE/health" >/dev/null && return
        sleep 0.1
    done
    echo "the target did not start (see $WORK/target.log)" >&2
    exit 1
}
stop_target() {
    if [ -n "$TARGET" ]; then
        kill "$TARGET" 2>/dev/null || true
        wait "$TARGET" 2>/dev/null || true
        TARGET=
    fi
}

cpu_seconds() { # cpu_seconds PID: user+system CPU seconds of a process so far
    awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}

metric() { # metric NAME: one value of the target at $BASE's /metrics
    curl -fs "$BASE/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}

ws_figures() { # ws_figures SUMMARY_JSON: sets sessions, received, expected, errors and connect_p95 from a host run's summary
    sessions=$(jq '.metrics.ws_sessions.count // 0' "$1")
    received=$(jq '.metrics.pushes_received.count // 0' "$1")
    expected=$(jq '.metrics.pushes_expected.count // 0' "$1")
    errors=$(jq '.metrics.ws_errors.count // 0' "$1")
    connect_p95=$(jq '.metrics.ws_connecting.p95 // 0' "$1")
}
