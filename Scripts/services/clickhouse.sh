#!/usr/bin/env bash
# A throwaway ClickHouse for the tests: its own config and data folder,
# listening on 127.0.0.1 only at free ports, run as the `clickhouse` user.
# The config declares a cluster `ingest_two_shards` of two shards that are
# two databases (ingest_shard1, ingest_shard2) of this one server, so a
# `Distributed` table can be tested without a second machine.
#
# Usage:
#   Scripts/services/clickhouse.sh start DIR   # writes DIR/clickhouse.env
#   Scripts/services/clickhouse.sh stop DIR    # SIGTERM by PID, SIGKILL after 15 s
#
# DIR/clickhouse.env exports INGEST_TEST_CLICKHOUSE_URL (http://127.0.0.1:PORT),
# INGEST_TEST_CLICKHOUSE_CLUSTER (the cluster's name) and
# INGEST_TEST_CLICKHOUSE_PID (the server's, for ingest-bench's CPU figures).
set -euo pipefail

command=${1:?usage: clickhouse.sh start|stop DIR}
dir=${2:?usage: clickhouse.sh start|stop DIR}
server=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)
[ -x "$server" ] || { echo "clickhouse.sh: clickhouse-server is not installed (apt-get install clickhouse-server)" >&2; exit 1; }

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# setpriv execs the server itself (no intermediate process), so $! is its PID.
as_clickhouse() {
    if [ "$(id -u)" -eq 0 ]; then
        exec setpriv --reuid=clickhouse --regid=clickhouse --init-groups -- "$@"
    else
        exec "$@"
    fi
}

start() {
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    local http tcp
    http=$(free_port)
    tcp=$(free_port)
    mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas"
    # The stock users.xml: user `default`, no password, reachable from the
    # listen address only (127.0.0.1 here).
    cp /etc/clickhouse-server/users.xml "$dir/users.xml"
    cat >"$dir/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>$dir/server.log</log>
        <errorlog>$dir/server.err.log</errorlog>
        <size>10M</size>
        <count>1</count>
    </logger>
    <http_port>$http</http_port>
    <tcp_port>$tcp</tcp_port>
    <listen_host>127.0.0.1</listen_host>
    <max_connections>256</max_connections>
    <keep_alive_timeout>10</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <mark_cache_size>67108864</mark_cache_size>
    <path>$dir/data/</path>
    <tmp_path>$dir/tmp/</tmp_path>
    <user_files_path>$dir/user_files/</user_files_path>
    <format_schema_path>$dir/format_schemas/</format_schema_path>
    <users_config>$dir/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mlock_executable>false</mlock_executable>
    <remote_servers>
        <ingest_two_shards>
            <shard>
                <internal_replication>false</internal_replication>
                <replica><host>127.0.0.1</host><port>$tcp</port><default_database>ingest_shard1</default_database></replica>
            </shard>
            <shard>
                <internal_replication>false</internal_replication>
                <replica><host>127.0.0.1</host><port>$tcp</port><default_database>ingest_shard2</default_database></replica>
            </shard>
        </ingest_two_shards>
    </remote_servers>
</yandex>
EOF
    if [ "$(id -u)" -eq 0 ]; then chown -R clickhouse: "$dir"; fi
    (as_clickhouse "$server" --config-file="$dir/config.xml") >"$dir/stdout.log" 2>&1 &
    echo $! >"$dir/clickhouse.pid"
    local url="http://127.0.0.1:$http"
    for _ in $(seq 1 300); do
        if curl -sf "$url/ping" >/dev/null 2>&1; then break; fi
        sleep 0.1
    done
    curl -sf "$url/ping" >/dev/null || { cat "$dir/stdout.log" "$dir/server.err.log" >&2 2>/dev/null; exit 1; }
    cat >"$dir/clickhouse.env" <<EOF
export INGEST_TEST_CLICKHOUSE_URL='$url'
export INGEST_TEST_CLICKHOUSE_CLUSTER='ingest_two_shards'
export INGEST_TEST_CLICKHOUSE_PID='$(cat "$dir/clickhouse.pid")'
EOF
    echo "clickhouse: $url (tcp $tcp, pid $(cat "$dir/clickhouse.pid" 2>/dev/null), data $dir/data)"
}

stop() {
    local pid
    pid=$(cat "$dir/clickhouse.pid" 2>/dev/null || true)
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    rm -f "$dir/clickhouse.pid"
}

case "$command" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: clickhouse.sh start|stop DIR" >&2; exit 2 ;;
esac
