#!/usr/bin/env bash
# Runs the whole test suite: installs missing Debian packages, builds, tests.
# Usage: Scripts/test.sh [extra `swift test` arguments, e.g. --filter BSON]
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/common.sh

ensure_packages "${BUILD_PACKAGES[@]}" curl python3 sqlite3 openssl gzip

swift build --build-tests
swift test --skip-build "$@"
