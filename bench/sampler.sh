#!/usr/bin/env bash
# The sampler's own CPU with 5 containers sampled every second (goal: under 1 % of one
# core). Starts a throwaway Compose project of 5 idle demo-target containers (no port,
# no healthcheck), runs `host stats --interval 1s` on it (the same sampler `host run`
# uses: one streaming stats call per container on a thread of its own), and reads from
# /proc, over a window of WINDOW seconds after a warm-up, the CPU time of
#   - the sampler thread alone (the thread named `sampler`; schedstat, in ns), and
#   - the whole `host stats` process (the sampler plus printing the table; stat, in
#     clock ticks of 10 ms, so ±0.03 % over 30 s).
# Every container it starts is removed on exit, failure or Ctrl-C.
#
# Run by hand: bench/sampler.sh [WINDOW_SECONDS] [ROUNDS]. Needs the Docker daemon,
# docker-compose, and target/debug/host + target/debug/demo-target
# (cargo build -p host -p demo-target).
set -euo pipefail
cd "$(dirname "$0")/.."
window=${1:-30}
rounds=${2:-3}
warmup=5
host=$PWD/target/debug/host
project=bench-sampler-$$-$(date +%s)
dir=$(mktemp -d)
stats_pid=
cleanup() {
    [ -n "$stats_pid" ] && kill "$stats_pid" 2>/dev/null || true
    "$host" down --project "$project" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

{
    echo "services:"
    for i in 1 2 3 4 5; do
        echo "  idle$i:"
        echo "    image: loadtest/demo-target"
        echo "    command: [\"--listen\", \"0.0.0.0:8080\", \"--allow-remote\"]"
        echo "    user: \"65534:65534\""
    done
} >"$dir/five.yml"
"$host" up -f "$dir/five.yml" --project "$project" >/dev/null

ticks=$(getconf CLK_TCK)
# utime + stime, in clock ticks, of /proc/$1, a process (its threads, dead ones too).
cpu_ticks() { awk '{ print $14 + $15 }' "$1/stat"; }
# Time on a CPU in nanoseconds of /proc/$1, a task (schedstat: finer than ticks).
cpu_ns() { awk '{ print $1 }' "$1/schedstat"; }

# The daemon serves the stats streams: its CPU over a window with no sampling and over
# each round, for scale (it also serves whoever else uses it meanwhile).
dockerd=$(pgrep -xo dockerd || true)
daemon_percent() { # ticks before, ticks after, wall seconds
    echo "$1 $2 $3 $ticks" | awk '{ printf "%.2f", ($2 - $1) / $4 / $3 * 100 }'
}
if [ -n "$dockerd" ]; then
    d0=$(cpu_ticks "/proc/$dockerd"); w0=$(date +%s.%N)
    sleep "$window"
    d1=$(cpu_ticks "/proc/$dockerd"); w1=$(date +%s.%N)
    idle_daemon=$(daemon_percent "$d0" "$d1" "$(echo "$w1 - $w0" | bc)")
    echo "dockerd with nothing sampled: $idle_daemon % of one core over ${window} s"
    echo
fi

echo "| round | window (s) | sampler thread (% of one core) | whole \`host stats\` process (% of one core) | dockerd (% of one core) |"
echo "| --- | --- | --- | --- | --- |"
for round in $(seq "$rounds"); do
    "$host" stats --project "$project" --interval 1s --count $((warmup + window + 5)) >/dev/null &
    stats_pid=$!
    sleep "$warmup"
    task=
    for t in /proc/$stats_pid/task/*; do
        if [ "$(cat "$t/comm")" = sampler ]; then task=$t; fi
    done
    [ -n "$task" ] || { echo "no sampler thread in host stats ($stats_pid)" >&2; exit 1; }
    d0=0; [ -n "$dockerd" ] && d0=$(cpu_ticks "/proc/$dockerd")
    s0=$(cpu_ns "$task"); p0=$(cpu_ticks "/proc/$stats_pid"); w0=$(date +%s.%N)
    sleep "$window"
    s1=$(cpu_ns "$task"); p1=$(cpu_ticks "/proc/$stats_pid"); w1=$(date +%s.%N)
    d1=0; [ -n "$dockerd" ] && d1=$(cpu_ticks "/proc/$dockerd")
    wait "$stats_pid" || true
    stats_pid=
    echo "$round $s0 $s1 $p0 $p1 $w0 $w1 $ticks $d0 $d1" | awk '{
        wall = $7 - $6;
        printf "| %d | %.1f | %.3f | %.2f | %.2f |\n", $1, wall,
            ($3 - $2) / 1e9 / wall * 100, ($5 - $4) / $8 / wall * 100,
            ($10 - $9) / $8 / wall * 100 }'
done
echo
echo "containers sampled: $(docker ps -q --filter label=com.docker.compose.project="$project" | wc -l)"
echo "machine: $(nproc) cores; $(uptime)"
echo "commit: $(git rev-parse --short HEAD); host: target/debug/host (debug build)"
