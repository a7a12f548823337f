#!/usr/bin/env bash
# Issue 12's 5 % check: the CPU per request of a plugin that uses neither the cookie jar
# nor local_ips (`hello`), on two host builds (A and B), against one nginx.
#
# nginx (one worker, bench/nginx.sh) runs on core 0 and each host run on core 1. Two
# measures, both differences of a short and a long run of the same binary, so start-up
# and the plugin's compilation cancel:
# - instructions per request under `valgrind --tool=callgrind` (repeatable on a busy
#   machine): (Ir(N_LONG) - Ir(N_SHORT)) / (requests(N_LONG) - requests(N_SHORT));
# - user + system CPU per request from wait4's rusage, over ROUNDS alternating A/B rounds
#   (ABAB..., the order flipped each round), medians reported.
#
# Usage: A_BIN=... A_PLUGIN=... B_BIN=... B_PLUGIN=... bench/cookie-cost/run.sh
# Environment: PORT (18280), VUS (10), CG_SHORT / CG_LONG (iterations under callgrind:
# 2000 / 8000; CALLGRIND=0 skips them), CPU_SHORT / CPU_LONG (iterations for rusage: 5000 / 150000), ROUNDS (3),
# GEN_CPU (1: the core of the host runs), OUT (a temp folder, kept: callgrind files for
# callgrind_annotate, summaries).
set -euo pipefail
cd "$(dirname "$0")/../.."

PORT=${PORT:-18280}
URL="http://127.0.0.1:$PORT/"
WORK=$(mktemp -d /tmp/cookie-cost-nginx.XXXXXX)
OUT=${OUT:-$(mktemp -d /tmp/cookie-cost.XXXXXX)}
export PORT URL WORK
for v in A_BIN A_PLUGIN B_BIN B_PLUGIN; do
    [ -n "${!v:-}" ] || { echo "set $v (A_BIN/A_PLUGIN: the old host and its hello.wasm; B_*: the new)" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 1; }

# shellcheck source=bench/nginx.sh
. bench/nginx.sh
trap stop_nginx EXIT
start_nginx

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/cookie-cost/measure.py "$OUT"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "files in $OUT"
