#!/usr/bin/env bash
# Runs the whole test suite: installs missing Debian packages, builds, tests.
# Usage: Scripts/test.sh [extra `swift test` arguments, e.g. --filter BSON]
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/common.sh

ensure_packages "${BUILD_PACKAGES[@]}" curl python3 sqlite3 openssl gzip

# --- Services for the sink tests (owned by Scripts/services/): a throwaway
# PostgreSQL and ClickHouse on 127.0.0.1, stopped by PID when this script
# exits. Tests that need them read INGEST_TEST_POSTGRES_URL and
# INGEST_TEST_CLICKHOUSE_URL and are skipped only when those are absent.
ensure_packages postgresql clickhouse-server util-linux haproxy
export INGEST_TEST_HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)   # the load-balancer test starts its own
services_dir=$(mktemp -d /tmp/dataingest-services.XXXXXX)
chmod 755 "$services_dir"   # the services run as their own users
stop_services() {
    Scripts/services/postgres.sh stop "$services_dir/postgres" || true
    Scripts/services/clickhouse.sh stop "$services_dir/clickhouse" || true
    rm -rf "$services_dir"
}
trap stop_services EXIT
Scripts/services/postgres.sh start "$services_dir/postgres"
source "$services_dir/postgres/postgres.env"
Scripts/services/clickhouse.sh start "$services_dir/clickhouse"
source "$services_dir/clickhouse/clickhouse.env"
# --- end of services ---

swift build --build-tests
# One test at a time: many tests start real processes and wait on them, and
# on a 2-core machine parallel runs made timing bounds depend on the load.
swift test --skip-build --no-parallel "$@"
