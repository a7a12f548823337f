#!/usr/bin/env bash
# Redis GET/SET: commands per CPU-second of the load generator, four ways against one
# redis-server (Debian's), each generator pinned to core 0 and the server to core 1:
#
#   redis-benchmark   -t set,get, CLIENTS connections, no pipelining
#   host rust         plugins/redis (scenario setget: SET then GET per iteration)
#   host js           bench/sockets/redis.js (k6/experimental/redis) under `host run`
#   k6                the same script under k6 1.1.0
#
# CPU is user + system seconds of the generator process tree (/usr/bin/time), not wall
# time: the machine may be busy with other work. For the host and k6 each way also runs
# SMALL iterations, and the marginal cost (CPU(N) - CPU(SMALL)) / (commands(N) -
# commands(SMALL)) takes out the start (the compile of the plugin or script, the
# runtime's start). The server's own INFO commandstats counts every command.
#
#   bench/sockets/run.sh            # N=20000 iterations (40,000 commands), 2 VUs
#   N=50000 VUS=2 bench/sockets/run.sh
#   HOST_BEFORE=/path/old-host PLUGIN_BEFORE=/path/old-redis.wasm bench/sockets/run.sh
#                                   # also an earlier host (and its plugin), same run
#
# Needs: target/release/host (or HOST=), plugins built (host's build does it), k6 1.1.0
# at K6 (/opt/k6venv/bin/k6), redis-server and redis-benchmark on PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."

HOST=${HOST:-target/release/host}
K6=${K6:-/opt/k6venv/bin/k6}
N=${N:-20000}
SMALL=${SMALL:-1000}
VUS=${VUS:-2}
PORT=${PORT:-16399}
PLUGIN=${PLUGIN:-plugins/target/wasm32-wasip2/release/redis.wasm}
HOST_BEFORE=${HOST_BEFORE:-}
PLUGIN_BEFORE=${PLUGIN_BEFORE:-$PLUGIN}
# The server, stopped with its files on exit.
. bench/sockets/server.sh

calls() { # set+get calls the server counted so far
    redis-cli -p "$PORT" INFO commandstats | tr -d '\r' |
        awk -F'[:=,]' '/^cmdstat_(set|get):/ {n += $3} END {print n + 0}'
}

others() { # calls of data commands other than SET and GET (a connection's setup,
    # such as redis-benchmark's CONFIG GET or go-redis's HELLO, is not one)
    redis-cli -p "$PORT" INFO commandstats | tr -d '\r' |
        awk -F'[:=,]' '/^cmdstat_/ && !/^cmdstat_(set|get|info|ping|config[|a-z]*|hello|client[|a-z]*|command[|a-z]*|auth|select):/ {n += $3} END {print n + 0}'
}

# measure NAME CMD...: runs CMD pinned to core 0; prints "cpu_s commands"
measure() {
    local name=$1; shift
    local before after other
    before=$(calls)
    other=$(others)
    /usr/bin/time -f '%U %S %e' -o "$WORK/$name.time" taskset -c 0 timeout 900 "$@" \
        >"$WORK/$name.log" 2>&1 || { echo "$name failed:" >&2; tail -20 "$WORK/$name.log" >&2; exit 1; }
    after=$(calls)
    # Work the server did that the figure would not count makes the figure wrong.
    if [ "$(others)" != "$other" ]; then
        echo "$name: the server counted commands other than SET and GET; the generator does more than this measures" >&2
        exit 1
    fi
    read -r user sys wall <"$WORK/$name.time"
    echo "$(echo "$user + $sys" | bc -l) $((after - before)) $wall"
}

config() { # a host run config: shared-iterations of the plugin's setget function
    # `exec` names the function; without it the scenario runs the plugin's default
    # (SET, GET, INCR, HSET, LPUSH), of which only SET and GET would be counted.
    printf '[scenarios.setget]\nexecutor = "shared-iterations"\nexec = "setget"\nvus = %s\niterations = %s\nmax_duration = "10m"\n' "$VUS" "$1" >"$WORK/run-$1.toml"
    echo "$WORK/run-$1.toml"
}

row() { # NAME CPU COMMANDS WALL [CPU_SMALL COMMANDS_SMALL]
    local name=$1 cpu=$2 cmds=$3 wall=$4
    local per=0
    if [ "$(echo "$cpu > 0" | bc -l)" = 1 ]; then per=$(echo "$cmds / $cpu" | bc -l); fi
    local marginal=-
    if [ $# -ge 6 ] && [ "$(echo "$2 > $5" | bc -l)" = 1 ]; then
        marginal=$(printf '%.0f' "$(echo "($3 - $6) / ($2 - $5)" | bc -l)")
    fi
    printf '| %s | %s | %.2f | %.2f | %.0f | %s |\n' "$name" "$cmds" "$cpu" "$wall" "$per" "$marginal"
}

echo "| generator | commands | CPU s | wall s | commands per CPU-second | marginal (start taken out) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"

read -r cpu cmds wall < <(measure redis-benchmark redis-benchmark -p "$PORT" -t set,get -n "$N" -c "$VUS" -P 1 -q)
row "redis-benchmark -c $VUS" "$cpu" "$cmds" "$wall"

# hosts LABEL HOST PLUGIN: the Rust plugin's and the k6 script's rows under one host
hosts() {
    local label=$1 host=$2 plugin=$3
    read -r cpu0 cmds0 _ < <(measure rust-small "$host" run "$plugin" --config "$(config "$SMALL")" -e REDIS_PORT="$PORT" -e REDIS_PREFIX=bench --quiet --out "$WORK/out")
    read -r cpu cmds wall < <(measure rust "$host" run "$plugin" --config "$(config "$N")" -e REDIS_PORT="$PORT" -e REDIS_PREFIX=bench --quiet --out "$WORK/out")
    row "host run$label, Rust plugin (plugins/redis)" "$cpu" "$cmds" "$wall" "$cpu0" "$cmds0"

    read -r cpu0 cmds0 _ < <(measure js-small "$host" run bench/sockets/redis.js -e REDIS_URL="redis://127.0.0.1:$PORT" -e VUS="$VUS" -e ITERATIONS="$SMALL" --quiet --out "$WORK/out")
    read -r cpu cmds wall < <(measure js "$host" run bench/sockets/redis.js -e REDIS_URL="redis://127.0.0.1:$PORT" -e VUS="$VUS" -e ITERATIONS="$N" --quiet --out "$WORK/out")
    row "host run$label, k6 script (k6/experimental/redis)" "$cpu" "$cmds" "$wall" "$cpu0" "$cmds0"
}

if [ -n "$HOST_BEFORE" ]; then hosts " (before)" "$HOST_BEFORE" "$PLUGIN_BEFORE"; fi
hosts "" "$HOST" "$PLUGIN"

read -r cpu0 cmds0 _ < <(measure k6-small "$K6" run --quiet --no-usage-report --no-summary -e REDIS_URL="redis://127.0.0.1:$PORT" -e VUS="$VUS" -e ITERATIONS="$SMALL" bench/sockets/redis.js)
read -r cpu cmds wall < <(measure k6 "$K6" run --quiet --no-usage-report --no-summary -e REDIS_URL="redis://127.0.0.1:$PORT" -e VUS="$VUS" -e ITERATIONS="$N" bench/sockets/redis.js)
row "k6 1.1.0 (k6/experimental/redis)" "$cpu" "$cmds" "$wall" "$cpu0" "$cmds0"
