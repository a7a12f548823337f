#!/usr/bin/env bash
# Time from `host up` to every service ready, for the demo stack (compose/docker-compose.yml).
# Run by hand: bench/stack.sh [ROUNDS]. Needs the Docker daemon, docker-compose, and
# target/debug/host + target/debug/demo-target (cargo build -p host -p demo-target).
# The first round may include the image import; later rounds reuse the image.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
host=target/debug/host
project=bench-stack-$$
trap '$host down --project $project >/dev/null 2>&1 || true' EXIT
echo "| round | host up → ready (s) | as printed by host up (s) |"
echo "| --- | --- | --- |"
for i in $(seq "$rounds"); do
    start=$(date +%s.%N)
    printed=$($host up --project "$project" 2>/dev/null | sed -n 's/^stack .* is up (\(.*\)s):$/\1/p')
    end=$(date +%s.%N)
    echo "| $i | $(echo "$end - $start" | bc) | $printed |"
    $host down --project "$project" >/dev/null
done
echo
echo "machine: $(nproc) cores; $(uptime)"
echo "commit: $(git rev-parse --short HEAD)"
