#!/usr/bin/env bash
# Instructions per iteration of bench/sockets/redis.js under `host run`, counted by
# callgrind (user space, the whole process, all threads): (cost at N2 - cost at N1) /
# (N2 - N1), so the build, the start and the end cancel out. Instruction counts do not
# depend on the machine's load: the figure to compare host builds by on a shared
# machine (bench/sockets/run.sh's commands per CPU-second are the goal's).
#
#   HOSTS="/path/before /path/after" bench/sockets/instructions.sh
#   SCRIPTS="bench/sockets/redis.js other.js" N1=500 N2=2500 VUS=2 bench/sockets/instructions.sh
#
# Each host runs each script once unmeasured first (its build and native compile are
# cached for valgrind's CPU). Needs valgrind, redis-server and redis-cli on PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."

HOSTS=${HOSTS:-target/release/host}
SCRIPTS=${SCRIPTS:-bench/sockets/redis.js}
N1=${N1:-500}
N2=${N2:-2500}
VUS=${VUS:-2}
PORT=${PORT:-16398}
# The server, stopped with its files on exit.
. bench/sockets/server.sh

# cost HOST SCRIPT N: instructions of one run of N iterations
cost() {
    local out="$WORK/cg.out"
    rm -f "$out"
    taskset -c 0 valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file="$out" \
        "$1" run "$2" -e REDIS_URL="redis://127.0.0.1:$PORT" -e VUS="$VUS" -e ITERATIONS="$3" \
        --quiet --out "$WORK/out" >"$WORK/log" 2>&1 || { tail -20 "$WORK/log" >&2; exit 1; }
    awk '/^totals:/ {print $2}' "$out"
}

echo "| host | script | instructions per iteration, (N$N2 - N$N1) / $((N2 - N1)), $VUS VUs |"
echo "| --- | --- | ---: |"
for host in $HOSTS; do
    for script in $SCRIPTS; do
        "$host" run "$script" -e REDIS_URL="redis://127.0.0.1:$PORT" -e VUS="$VUS" -e ITERATIONS=10 \
            --quiet --out "$WORK/out" >/dev/null 2>&1
        cost "$host" "$script" "$VUS" >/dev/null # the native compile for valgrind's CPU
        a=$(cost "$host" "$script" "$N1")
        b=$(cost "$host" "$script" "$N2")
        echo "| $host | $script | $(( (b - a) / (N2 - N1) )) |"
    done
done
