#!/usr/bin/env bash
# What the cookie jar and `[http] local_ips` cost per request: CPU-seconds of the host
# (release build) per request with and without each, in the same run, rounds
# alternated, against the demo target (`host target`) on 127.0.0.1. Run by hand:
# `bench/http-costs.sh`. Writes the table between the `bench/http-costs` markers of
# results/peers.md (the rest of that file is kept).
#
# The target is pinned to core 0, the host to core 1. Arms:
# - `hello`: the hello plugin (one GET / and a check), no [http] settings: a plugin that
#   uses neither the jar nor local_ips;
# - `hello+local_ips`: the same with `[http] local_ips` over 50 addresses (one per VU);
# - `probe`: http_probe MODE=bench, hello's iteration with an empty jar;
# - `probe+jar`: the same with 3 cookies in each VU's jar, sent with every request;
# - `probe+jar-opt-out`: 3 cookies in the jar, every request leaving the jar out.
#
# Environment: VUS (50), DURATION (10, seconds), ROUNDS (3), PORT (18090),
# OUT (results/peers.md), HOST_BIN (target/release/host).
set -euo pipefail
cd "$(dirname "$0")/.."

VUS=${VUS:-50}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18090}
OUT=${OUT:-results/peers.md}
HOST_BIN=${HOST_BIN:-target/release/host}
PLUGINS=plugins/target/wasm32-wasip2/release
BASE="http://127.0.0.1:$PORT"
ARMS=(hello hello+local_ips probe probe+jar probe+jar-opt-out)

[ -x "$HOST_BIN" ] || cargo build --release -p host
WORK=$(mktemp -d)
TARGET_PID=
cleanup() {
    [ -n "$TARGET_PID" ] && kill "$TARGET_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# Every arm runs the same closed-model schedule (--vus and --duration fill it in);
# local_ips is a second config layered on top.
cat >"$WORK/constant.toml" <<EOF
[scenarios.default]
executor = "constant-vus"
vus = 1
duration = "1s"
EOF
cat >"$WORK/local_ips.toml" <<EOF
[http]
local_ips = ["127.0.0.10-127.0.0.59"]
EOF

# The host's arguments for an arm.
args_of() {
    local common=(--config "$WORK/constant.toml" --vus "$VUS" --duration "${DURATION}s" -e "BASE_URL=$BASE" --quiet --out "$WORK/out")
    case "$1" in
    hello) echo "$PLUGINS/hello.wasm ${common[*]}" ;;
    hello+local_ips) echo "$PLUGINS/hello.wasm ${common[*]} --config $WORK/local_ips.toml" ;;
    probe) echo "$PLUGINS/http_probe.wasm -e MODE=bench -e COOKIES=0 ${common[*]}" ;;
    probe+jar) echo "$PLUGINS/http_probe.wasm -e MODE=bench -e COOKIES=3 ${common[*]}" ;;
    probe+jar-opt-out) echo "$PLUGINS/http_probe.wasm -e MODE=bench -e COOKIES=3 -e NO_JAR=1 ${common[*]}" ;;
    esac
}

taskset -c 0 "$HOST_BIN" target --listen "127.0.0.1:$PORT" >"$WORK/target.log" 2>&1 &
TARGET_PID=$!
for _ in $(seq 50); do
    grep -q "listening" "$WORK/target.log" 2>/dev/null && break
    sleep 0.1
done

LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
echo "arm round requests cpu_s" >"$WORK/runs.txt"
for round in $(seq "$ROUNDS"); do
    # Rotate the order each round, so a noisy neighbour hurts every arm alike.
    for i in $(seq 0 $((${#ARMS[@]} - 1))); do
        arm=${ARMS[$(((i + round) % ${#ARMS[@]}))]}
        rm -rf "$WORK/out"
        # shellcheck disable=SC2046
        /usr/bin/time -f "%U %S" -o "$WORK/time" taskset -c 1 "$HOST_BIN" run $(args_of "$arm") >/dev/null
        read -r user sys <"$WORK/time"
        reqs=$(python3 -c 'import json,sys,glob; s=json.load(open(glob.glob(sys.argv[1]+"/*/summary.json")[0])); print(int(s["metrics"]["http_reqs"]["count"]))' "$WORK/out")
        cpu=$(python3 -c "print($user + $sys)")
        echo "$arm $round $reqs $cpu" | tee -a "$WORK/runs.txt"
    done
done
LOAD_AFTER=$(cut -d' ' -f1 /proc/loadavg)

python3 - "$WORK/runs.txt" "$OUT" "$LOAD_BEFORE" "$LOAD_AFTER" "$VUS" "$DURATION" "$ROUNDS" <<'EOF'
import datetime, os, statistics, subprocess, sys
runs_file, out, load_before, load_after, vus, duration, rounds = sys.argv[1:]
rows = [l.split() for l in open(runs_file).read().splitlines()[1:]]
arms = {}
for arm, rnd, reqs, cpu in rows:
    arms.setdefault(arm, []).append((int(rnd), int(reqs), float(cpu)))
def us(arm):
    return statistics.median(cpu / reqs * 1e6 for _, reqs, cpu in arms[arm])
def ratio(a, b):
    return f"{us(a) / us(b):.3f}"
cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
lines = [
    f"## Cost of the cookie jar and of local_ips per request ({now}, commit {commit})",
    "",
    f"The host (release build) runs {vus} VUs for {duration} s per run, pinned to core 1, against the demo",
    "target (`host target`, same binary) pinned to core 0 on 127.0.0.1; "
    f"{rounds} rounds, arm order rotated; medians over rounds. CPU is the host's user + sys "
    "from `/usr/bin/time`, start-up included; µs per request = CPU ÷ `http_reqs`.",
    f"Machine: nproc {os.cpu_count()}, {cpu_model}; load average {load_before} before, {load_after} after "
    "(2 cores shared with other work: compare ratios within this run, not absolute figures).",
    "",
    "| arm | what it does | requests (median) | CPU µs per request (median) | ratio |",
    "| --- | --- | ---: | ---: | --- |",
]
what = {
    "hello": "hello plugin, no `[http]` settings (uses neither)",
    "hello+local_ips": "hello, `local_ips = [\"127.0.0.10-127.0.0.59\"]` (a source address per VU)",
    "probe": "http_probe MODE=bench: GET / + check, jar empty",
    "probe+jar": "the same, 3 cookies in each VU's jar, sent with every request",
    "probe+jar-opt-out": "3 cookies in the jar, every request `.no_cookie_jar()`",
}
versus = {
    "hello": "",
    "hello+local_ips": "÷ hello = " + ratio("hello+local_ips", "hello"),
    "probe": "÷ hello = " + ratio("probe", "hello"),
    "probe+jar": "÷ probe = " + ratio("probe+jar", "probe"),
    "probe+jar-opt-out": "÷ probe = " + ratio("probe+jar-opt-out", "probe"),
}
for arm in ["hello", "hello+local_ips", "probe", "probe+jar", "probe+jar-opt-out"]:
    reqs = statistics.median(r for _, r, _ in arms[arm])
    lines.append(f"| {arm} | {what[arm]} | {reqs:.0f} | {us(arm):.1f} | {versus[arm]} |")
lines += ["", "Every run:", "", "| arm | round | requests | CPU s | µs per request |", "| --- | ---: | ---: | ---: | ---: |"]
for arm, rnd, reqs, cpu in rows:
    lines.append(f"| {arm} | {rnd} | {reqs} | {float(cpu):.2f} | {float(cpu) / int(reqs) * 1e6:.1f} |")
lines += ["", "Command: `bench/http-costs.sh` (VUS, DURATION, ROUNDS in the environment); each run is",
          "`taskset -c 1 target/release/host run PLUGIN --config constant.toml [ARM FLAGS] --vus 50 --duration 10s -e BASE_URL=http://127.0.0.1:18090 --quiet --out DIR`",
          "(constant.toml: one constant-vus scenario; the local_ips arm adds `--config local_ips.toml`; the probe arms `-e MODE=bench -e COOKIES=0|3 [-e NO_JAR=1]`)",
          "with the target started as `taskset -c 0 target/release/host target --listen 127.0.0.1:18090`."]
table = "\n".join(lines)
start, end = "<!-- bench/http-costs: generated table starts -->", "<!-- bench/http-costs: generated table ends -->"
text = open(out).read()
if start in text:
    before, rest = text.split(start, 1)
    after = rest.split(end, 1)[1]
    text = before + start + "\n" + table + "\n" + end + after
else:
    text = text.rstrip("\n") + "\n\n" + start + "\n" + table + "\n" + end + "\n"
open(out, "w").write(text)
print(table)
EOF
