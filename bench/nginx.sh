# shellcheck shell=bash
# Sourced by bench/ scripts: an nginx of our own (one worker, pinned to core 0) serving a
# 13-byte file on 127.0.0.1:$PORT, configured in $WORK. Needs WORK, PORT and URL set.
# With TLS_PORT set it also serves https (with http2 on) on 127.0.0.1:$TLS_PORT, and on
# 127.0.0.1:$((TLS_PORT + 1)) https that closes the connection after each request (every
# request then costs a new TCP connection and a full TLS handshake); the certificate is
# made by make_tls_cert, its CA in $WORK/tls/ca.pem for the clients to trust.
#
# Knobs, read by each start_nginx (bench/scaling starts two nginx at once this way):
# NGINX_WORKERS (1), NGINX_CPUS (0: the cores nginx is pinned to, as taskset takes
# them; empty: any core), NGINX_RETURN (0; 1: the 13 bytes are answered by a `return`
# in the config instead of read from the file: a lighter target, no open/fstat/read per
# request), NGINX_NAME (nginx: names its config and pid files, so two can run).
# NGINX_PID is the last one started; stop_nginx stops every one.

NGINX_PID=
NGINX_PIDS=()

start_nginx() {
    # Something else answering on the port would be measured in nginx's place.
    if curl -fsS -o /dev/null "$URL" 2>/dev/null; then
        echo "$URL already answers (another server holds port $PORT); set PORT" >&2
        exit 1
    fi
    mkdir -p "$WORK/www" "$WORK/logs"
    # mktemp makes the folder private; nginx workers run as another user.
    chmod 755 "$WORK"
    printf 'hello, world\n' >"$WORK/www/index.html"
    local tls_servers=
    if [ -n "${TLS_PORT:-}" ]; then
        make_tls_cert
        # Session tickets and the session cache are off so that a new connection is a
        # full handshake for every client alike (rustls and OpenSSL resume differently).
        tls_servers="
    ssl_certificate $WORK/tls/server.pem;
    ssl_certificate_key $WORK/tls/server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_tickets off;
    ssl_session_cache off;
    server {
        listen 127.0.0.1:$TLS_PORT ssl http2 backlog=4096;
        root $WORK/www;
        location / { index index.html; }
    }
    server {
        listen 127.0.0.1:$((TLS_PORT + 1)) ssl backlog=4096;
        keepalive_requests 1;
        root $WORK/www;
        location / { index index.html; }
    }"
    fi
    local name=${NGINX_NAME:-nginx} content="index index.html;"
    [ "${NGINX_RETURN:-0}" = 1 ] && content='default_type text/html; return 200 "hello, world\n";'
    cat >"$WORK/$name.conf" <<EOF
worker_processes ${NGINX_WORKERS:-1};
daemon off;
pid $WORK/$name.pid;
error_log $WORK/logs/$name.error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    server {
        listen 127.0.0.1:$PORT backlog=4096;
        root $WORK/www;
        location / { $content }
        # Requests nginx has read, for the scripts that count what was received
        # (nginx_requests below) rather than what a generator says it sent.
        location = /nginx_status { stub_status; }
    }$tls_servers
}
EOF
    local cpus=${NGINX_CPUS-0}
    if [ -n "$cpus" ]; then
        taskset -c "$cpus" nginx -p "$WORK" -c "$WORK/$name.conf" &
    else
        nginx -p "$WORK" -c "$WORK/$name.conf" &
    fi
    NGINX_PID=$!
    NGINX_PIDS+=("$NGINX_PID")
    for _ in $(seq 50); do
        curl -fsS "$URL" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "nginx did not start: $(tail -3 "$WORK/logs/$name.error.log")" >&2
    exit 1
}

# A CA and a server certificate for 127.0.0.1 (ECDSA P-256, as most sites serve), in
# $WORK/tls: ca.pem for the clients, server.pem and server.key for nginx.
make_tls_cert() {
    local dir="$WORK/tls"
    mkdir -p "$dir"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=bench CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' >"$dir/ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
        -CAcreateserial -days 2 -extfile "$dir/ext" -out "$dir/server.pem" 2>/dev/null
    chmod 644 "$dir"/*
}

# The count of requests the nginx on $PORT has read so far (stub_status; this read
# itself is counted, so a difference of two reads is one more than what came between).
nginx_requests() {
    curl -fsS "http://127.0.0.1:$PORT/nginx_status" | awk 'NR == 3 {print $3}'
}

stop_nginx() {
    local pid
    for pid in "${NGINX_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}

# CPU seconds (user + sys) the nginx whose master is $1 has used so far: its workers'
# (the master only reads the config).
nginx_cpu() {
    local total=0 pid ticks
    for pid in $(pgrep -P "$1"); do
        ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
        total=$((total + ticks))
    done
    echo "$total $(getconf CLK_TCK)" | awk '{printf "%.2f", $1 / $2}'
}
