# shellcheck shell=bash
# Sourced by bench/ scripts: an nginx of our own (one worker, pinned to core 0) serving a
# 13-byte file on 127.0.0.1:$PORT, configured in $WORK. Needs WORK, PORT and URL set.

NGINX_PID=

start_nginx() {
    mkdir -p "$WORK/www" "$WORK/logs"
    # mktemp makes the folder private; nginx workers run as another user.
    chmod 755 "$WORK"
    printf 'hello, world\n' >"$WORK/www/index.html"
    cat >"$WORK/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    server {
        listen 127.0.0.1:$PORT backlog=4096;
        root $WORK/www;
        location / { index index.html; }
    }
}
EOF
    taskset -c 0 nginx -p "$WORK" -c "$WORK/nginx.conf" &
    NGINX_PID=$!
    for _ in $(seq 50); do
        curl -fsS "$URL" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "nginx did not start: $(tail -3 "$WORK/logs/error.log")" >&2
    exit 1
}

stop_nginx() {
    if [ -n "$NGINX_PID" ]; then
        kill "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
}
