#!/usr/bin/env bash
# Runs the whole test suite: installs missing Debian packages, builds, tests.
# Usage: Scripts/test.sh [extra `swift test` arguments, e.g. --filter BSON]
#        Scripts/test.sh --portable [extra `swift test` arguments]
#   --portable  the client and core suites (IngestCoreTests, DataIngestTests;
#               another --filter replaces that) with DATAINGEST_PORTABLE=1,
#               which forces every portable fallback of the hot paths
#               (Docs/Testing.md, "Portable fallbacks"); no services started
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/common.sh

portable=0
if [ "${1:-}" = "--portable" ]; then
    portable=1
    shift
fi

ensure_packages "${BUILD_PACKAGES[@]}" curl python3 sqlite3 openssl gzip
ensure_packages "${POWER_PACKAGES[@]}"
use_vendor_mirrors
# The OpenAPI description's test runs schemathesis (from PyPI).
ensure_schemathesis

if [ "$portable" = 1 ]; then
    swift build --build-tests
    filter=(--filter 'IngestCoreTests|DataIngestTests')
    for argument in "$@"; do [ "$argument" = "--filter" ] && filter=(); done
    # Exported: the child processes the tests start run portable too.
    export DATAINGEST_PORTABLE=1
    run_watched swift test --skip-build --no-parallel "${filter[@]}" "$@"
    exit 0
fi

# The services the sink tests need: PostgreSQL and ClickHouse on 127.0.0.1,
# stopped by PID when this script exits (Scripts/common.sh).
start_test_services

# Headless Chromium for the status page test (StatusPageBrowserTests).
ensure_packages chromium
export INGEST_TEST_CHROMIUM=$(command -v chromium || echo /usr/bin/chromium)

swift build --build-tests
# One test at a time: many tests start real processes and wait on them, and
# on a 2-core machine parallel runs made timing bounds depend on the load.
# Watched: a test silent for minutes gets its processes and threads printed.
run_watched swift test --skip-build --no-parallel "$@"
