#!/usr/bin/env bash
# Unary gRPC calls per CPU-second of the generator: the host (plugin grpc-call) against
# k6's k6/net/grpc, on the same proto and the same server (on core 0), each generator
# pinned to core 1, VUS VUs for DURATION, ROUNDS rounds alternating; prints a Markdown
# row per round (with the server's CPU seconds during each generator's run: a server
# near DURATION seconds of CPU is the bound) and the median ratio.
# HOST_WASM=path runs another build of grpc-call (a build of main's, to compare).
#
# SERVER chooses the server:
# - grpcio (default): Python grpcio, host/tests/fixtures/grpc/server.py, method
#   loadtest.test.Counter/Echo of host/tests/fixtures/grpc/counter.proto;
# - demo: the demo target's gRPC face (release build, --grpc-listen), method
#   demo.gateway.v1.Gateway/Topology of compose/demo-target/proto/gateway.proto.
#
#   bench/grpc/run.sh                       (VUS=50 DURATION=8s ROUNDS=3; HOST=path skips the build)
#   JS=1 bench/grpc/run.sh                  the host runs bench/grpc/k6.js itself (k6/net/grpc
#                                           in the host's JavaScript layer) instead of grpc-call
#   SERVER=demo bench/grpc/run.sh           (DEMO=path skips the demo target's build)
#
# Needs: a release host (built here), k6 on PATH or in K6, target/grpc-venv (./dev test
# makes it) for grpcio, /usr/bin/time, taskset, jq, curl.
set -euo pipefail
cd "$(dirname "$0")/../.."

SERVER=${SERVER:-grpcio}
VUS=${VUS:-50}
DURATION=${DURATION:-8s}
ROUNDS=${ROUNDS:-3}
K6=${K6:-k6}
PY=target/grpc-venv/bin/python
FIXTURES=host/tests/fixtures/grpc

if [ -z "${HOST:-}" ]; then
    cargo build --release -p host >&2
    HOST=target/release/host
fi
PLUGIN=${HOST_WASM:-plugins/target/wasm32-wasip2/release/grpc_call.wasm}
WORK=$(mktemp -d)

case "$SERVER" in
grpcio)
    PROTO_DIR=$PWD/$FIXTURES
    PROTO_FILE=counter.proto
    METHOD=loadtest.test.Counter/Echo
    REQUEST='{"text":"hi"}'
    mkfifo "$WORK/in"
    taskset -c 0 "$PY" "$FIXTURES/server.py" <"$WORK/in" >"$WORK/server.out" 2>"$WORK/server.err" &
    SERVER_PID=$!
    exec 3>"$WORK/in"
    trap 'exec 3>&-; kill $SERVER_PID 2>/dev/null || true' EXIT
    for _ in $(seq 100); do
        grep -q PORTS "$WORK/server.out" 2>/dev/null && break
        sleep 0.1
    done
    PORT=$(awk '/^PORTS/ { print $2 }' "$WORK/server.out")
    TARGET="127.0.0.1:$PORT"
    served() { # calls the server answered so far
        echo stats >&3
        sleep 0.2
        tail -1 "$WORK/server.out" | jq '[.calls[]] | add // 0'
    }
    ;;
demo)
    if [ -z "${DEMO:-}" ]; then
        cargo build --release -p demo-target >&2
        DEMO=target/release/demo-target
    fi
    PROTO_DIR=$PWD/compose/demo-target/proto
    PROTO_FILE=gateway.proto
    METHOD=demo.gateway.v1.Gateway/Topology
    REQUEST='{}'
    taskset -c 0 "$DEMO" --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 >"$WORK/server.out" 2>"$WORK/server.err" &
    SERVER_PID=$!
    trap 'kill $SERVER_PID 2>/dev/null || true' EXIT
    for _ in $(seq 100); do
        grep -q 'listening on http' "$WORK/server.out" 2>/dev/null && break
        sleep 0.1
    done
    TARGET=$(sed -n 's/^demo target listening on gRPC .* \([0-9.:]*\) too$/\1/p' "$WORK/server.out")
    BASE=$(sed -n 's/^demo target listening on \(http:.*\)$/\1/p' "$WORK/server.out")
    served() { # Topology calls the gRPC face answered so far
        curl -s "$BASE/metrics" | awk '/^demo_grpc_calls_total\{method="Topology"\}/ { print $2 }'
    }
    ;;
*)
    echo "SERVER=$SERVER: write grpcio or demo" >&2
    exit 2
    ;;
esac

cat >"$WORK/run.toml" <<TOML
[scenarios.default]
executor = "constant-vus"
vus = $VUS
duration = "$DURATION"
[data]
proto = "$PROTO_DIR/$PROTO_FILE"
[env]
GRPC_TARGET = "$TARGET"
GRPC_METHOD = "$METHOD"
GRPC_REQUEST = '$REQUEST'
GRPC_PROTO = "proto"
TOML

# The same script under the host: the load k6 gets from --vus and --duration.
cat >"$WORK/run-js.toml" <<TOML
[scenarios.default]
executor = "constant-vus"
vus = $VUS
duration = "$DURATION"
TOML
if [ "${JS:-0}" = 1 ]; then
    # The protos lie outside the script's folder: bundling them is the operator's call.
    HOST_RUN=("$HOST" run bench/grpc/k6.js --config "$WORK/run-js.toml" -e GRPC_TARGET="$TARGET"
        -e PROTO_DIR="$PWD/$FIXTURES" --allow-outside-files)
    # Builds the script's component once (cached by its inputs), outside the rounds.
    "$HOST" run bench/grpc/k6.js -e GRPC_TARGET="$TARGET" -e PROTO_DIR="$PWD/$FIXTURES" \
        --allow-outside-files --out "$WORK/warm-up" --quiet >/dev/null
else
    HOST_RUN=("$HOST" run "$PLUGIN" --config "$WORK/run.toml")
fi

# The server's CPU seconds so far (user + sys), to see whether it is the bound.
TICKS=$(getconf CLK_TCK)
server_cpu() {
    awk -v t="$TICKS" '{ printf "%.2f\n", ($14 + $15) / t }' "/proc/$SERVER_PID/stat"
}

# gen NAME CMD...: runs a generator on core 1; prints "calls cpu_seconds
# server_cpu_seconds".
gen() {
    local name=$1
    shift
    local before after s_before s_after
    before=$(served)
    s_before=$(server_cpu)
    /usr/bin/time -f '%U %S' -o "$WORK/$name.time" taskset -c 1 "$@" >"$WORK/$name.log" 2>&1
    s_after=$(server_cpu)
    after=$(served)
    awk -v n=$((after - before)) -v s="$(echo "$s_after - $s_before" | bc -l)" \
        '{ printf "%d %.2f %.2f\n", n, $1 + $2, s }' "$WORK/$name.time"
}

echo "| round | host calls | host CPU s | host calls/CPU-s | k6 calls | k6 CPU s | k6 calls/CPU-s | host / k6 | server CPU s (host, k6) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
ratios=()
for r in $(seq "$ROUNDS"); do
    read -r hc hs hv < <(gen "host-$r" "${HOST_RUN[@]}" --out "$WORK/out-$r" --quiet)
    read -r kc ks kv < <(gen "k6-$r" env GRPC_TARGET="$TARGET" PROTO_DIR="$PROTO_DIR" PROTO_FILE="$PROTO_FILE" \
        GRPC_METHOD="$METHOD" GRPC_REQUEST="$REQUEST" \
        "$K6" run --quiet --no-usage-report --vus "$VUS" --duration "$DURATION" bench/grpc/k6.js)
    hr=$(echo "$hc / $hs" | bc -l)
    kr=$(echo "$kc / $ks" | bc -l)
    ratio=$(echo "$hr / $kr" | bc -l)
    ratios+=("$ratio")
    printf "| %d | %d | %.2f | %.0f | %d | %.2f | %.0f | %.2f | %.2f, %.2f |\n" "$r" "$hc" "$hs" "$hr" "$kc" "$ks" "$kr" "$ratio" "$hv" "$kv"
done
printf "\nmedian host / k6: %.2f\n" "$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
