#!/usr/bin/env bash
# Where HTML is parsed: the same page parsed and queried (a hidden form field and a
# JSON <script>) inside the plugin (scraper compiled to WebAssembly) and on the host
# (the contract's `html` interface, scraper native), on the demo target's survey page
# (0.5 KB) and on a generated page of about 100 KB. Prints a markdown table: the cost of
# one parse with its two lookups (median over the iterations, each the mean of REPS
# parses) and the plugin's linear memory after the run (it never shrinks: what a
# guest-side parser leaves every VU holding).
#
# Run by hand: bench/html-parse/run.sh. Needs target/release/host (or HOST_BIN) and the
# wasm32-wasip2 target. Environment: HOST_BIN, CPU (1: the core the host is pinned to),
# ITERATIONS (40), REPS (20).
set -euo pipefail
cd "$(dirname "$0")"
HOST_BIN=${HOST_BIN:-../../target/release/host}
CPU=${CPU:-1}
ITERATIONS=${ITERATIONS:-40}
REPS=${REPS:-20}
[ -x "$HOST_BIN" ] || { echo "missing $HOST_BIN: cargo build --release -p host" >&2; exit 1; }
(cd plugin && cargo build --release --target wasm32-wasip2 --quiet)
WASM=plugin/target/wasm32-wasip2/release/html_parse_bench.wasm
OUT=$(mktemp -d /tmp/html-parse.XXXXXX)

echo "| page | where | parse + 2 lookups, µs (p50) | plugin memory after, KiB |"
echo "| --- | --- | --- | --- |"
for page in survey big; do
    for where in guest host; do
        dir="$OUT/$page-$where"
        cat >"$OUT/run.toml" <<TOML
[scenarios.$where]
executor = "per-vu-iterations"
vus = 1
iterations = $ITERATIONS
exec = "$where"
TOML
        taskset -c "$CPU" "$HOST_BIN" run "$WASM" --config "$OUT/run.toml" -e PAGE="$page" -e REPS="$REPS" \
            --out "$dir" --quiet >/dev/null
        summary=$(ls -d "$dir"/*/ | head -1)summary.json
        python3 - "$summary" "$page" "$where" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
m = s["metrics"]
p50 = m["parse_us"].get("p50", m["parse_us"].get("med"))
mem = m["wasm_memory_kib"].get("value", m["wasm_memory_kib"].get("max"))
print(f"| {sys.argv[2]} ({m['page_kib'].get('value', m['page_kib'].get('max')):.1f} KiB) | {sys.argv[3]} | {p50:.0f} | {mem:.0f} |")
PY
    done
done
echo
echo "machine: $(nproc) cores, $(uname -r); host $("$HOST_BIN" --version 2>/dev/null || echo '?'); pinned to core $CPU; $ITERATIONS iterations × $REPS parses"
