#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests: a cluster initialised in a folder,
# listening on 127.0.0.1 only, at a free port, owned by the `postgres` user.
#
# Usage:
#   Scripts/services/postgres.sh start DIR   # initdb (first time) + start; writes DIR/postgres.env
#   Scripts/services/postgres.sh stop DIR    # fast shutdown by PID (postmaster.pid)
#   Scripts/services/postgres.sh restart DIR # stop + start on the same port and data
#
# DIR/postgres.env exports INGEST_TEST_POSTGRES_URL (a libpq URI),
# INGEST_TEST_POSTGRES_DIR (DIR, so tests can restart the server) and
# INGEST_TEST_POSTGRES_PID (the postmaster's, for ingest-bench's CPU figures).
set -euo pipefail

command=${1:?usage: postgres.sh start|stop|restart DIR}
dir=${2:?usage: postgres.sh start|stop|restart DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/postgres" ] || { echo "postgres.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }

# PostgreSQL refuses to run as root: run its tools as the `postgres` user.
as_postgres() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

pid_of() {
    [ -f "$dir/data/postmaster.pid" ] && head -1 "$dir/data/postmaster.pid" || true
}

start() {
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        # trust on 127.0.0.1 only: a test cluster on loopback, nothing else listens.
        as_postgres "$bin/initdb" -N -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; exit 1; }
        free_port >"$dir/port"
        cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $(cat "$dir/port")
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 100
shared_buffers = 64MB
EOF
    fi
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    local port
    port=$(cat "$dir/port")
    cat >"$dir/postgres.env" <<EOF
export INGEST_TEST_POSTGRES_URL='postgresql://postgres@127.0.0.1:$port/postgres'
export INGEST_TEST_POSTGRES_DIR='$dir'
export INGEST_TEST_POSTGRES_PID='$(pid_of)'
EOF
    echo "postgres: 127.0.0.1:$port (pid $(pid_of), data $dir/data)"
}

stop() {
    local pid
    pid=$(pid_of)
    [ -n "$pid" ] || return 0
    # SIGINT is PostgreSQL's fast shutdown: roll back clients, checkpoint, exit.
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    rm -f "$dir/data/postmaster.pid"
}

case "$command" in
    start) start ;;
    stop) stop ;;
    restart) stop; start ;;
    *) echo "usage: postgres.sh start|stop|restart DIR" >&2; exit 2 ;;
esac
