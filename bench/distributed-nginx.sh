#!/usr/bin/env bash
# bench/distributed.py against nginx (one worker on core 0, bench/nginx.sh), the
# coordinator and its workers pinned to core 1.
# Usage: bench/distributed-nginx.sh HOST_BINARY PLUGIN.wasm [SHORT_S [LONG_S]]
# Environment: PORT (nginx's, 18380), VUS (per worker, 4), GEN_CPUS (1).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-18380}
URL="http://127.0.0.1:$PORT/"
WORK=$(mktemp -d /tmp/dist-nginx.XXXXXX)
export PORT URL WORK
# shellcheck source=bench/nginx.sh
. bench/nginx.sh
trap stop_nginx EXIT
start_nginx
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
BASE_URL="http://127.0.0.1:$PORT" GEN_CPUS=${GEN_CPUS:-1} PORT=17878 python3 bench/distributed.py "$@"
