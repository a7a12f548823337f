# Sourced by run.sh and instructions.sh: a throwaway redis-server on $PORT, pinned to
# core 1 (the generators take core 0), its files in a fresh $WORK; the server is
# stopped and $WORK removed when the sourcing script exits, whatever way it ends.

WORK=$(mktemp -d)
SERVER=

stop() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    rm -rf "$WORK"
}
trap stop EXIT

taskset -c 1 redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$WORK" >/dev/null 2>&1 &
SERVER=$!
for _ in $(seq 100); do redis-cli -p "$PORT" PING >/dev/null 2>&1 && break; sleep 0.1; done
