#!/usr/bin/env bash
# Where the CPU per request goes, for the two builds of bench/cookie-cost/run.sh: a flat
# profile of each (perf record with the software cpu-clock event, since this machine's
# VM exposes no hardware counters) over the same `hello` run against one nginx, nginx on
# core 0 and the host on core 1. Writes OUT/perf.{A,B}.txt (symbols by self time).
# Usage: A_BIN=... A_PLUGIN=... B_BIN=... B_PLUGIN=... bench/cookie-cost/profile.sh
# Environment: PORT (18290), VUS (10), ITERATIONS (150000), OUT (a temp folder, kept).
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT=${PORT:-18290}
URL="http://127.0.0.1:$PORT/"
WORK=$(mktemp -d /tmp/cookie-profile-nginx.XXXXXX)
OUT=${OUT:-$(mktemp -d /tmp/cookie-profile.XXXXXX)}
export PORT URL WORK
# shellcheck source=bench/nginx.sh
. bench/nginx.sh
trap stop_nginx EXIT
start_nginx
for tool in A B; do
    bin_var=${tool}_BIN plugin_var=${tool}_PLUGIN
    # The first run fills the compilation cache, so the profiled one does not compile.
    "${!bin_var}" run "${!plugin_var}" --vus "${VUS:-10}" --iterations 100 -e "BASE_URL=$URL" \
        --out "$OUT/warm-$tool" --quiet >/dev/null
    taskset -c 1 perf record -q -e cpu-clock -F 4000 -o "$OUT/perf.$tool.data" -- \
        "${!bin_var}" run "${!plugin_var}" --vus "${VUS:-10}" --iterations "${ITERATIONS:-150000}" \
        -e "BASE_URL=$URL" --out "$OUT/run-$tool" --quiet >/dev/null
    perf report -i "$OUT/perf.$tool.data" --no-children --sort symbol --stdio --percent-limit 0.3 \
        2>/dev/null | grep -v '^#' | grep -v '^$' >"$OUT/perf.$tool.txt"
    echo "== $tool: $(grep -c . "$OUT/perf.$tool.txt") symbols over 0.3 %, in $OUT/perf.$tool.txt"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
