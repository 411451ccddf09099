#!/usr/bin/env bash
# The power-cut harness (Docs/Reliability.md, "Power loss"): boots the store's
# crash child and ingest-server in qemu guests and cuts their power.
# Installs the guest's packages when missing, builds (a no-op after
# Scripts/test.sh), then runs PowerCutTests and ServerPowerCutTests.
# Usage: Scripts/power.sh [extra `swift test` arguments]
# Longer runs: INGEST_POWER_CUTS, INGEST_POWER_SECONDS, INGEST_POWER_SERVER_CUTS
# (Docs/Testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/common.sh

ensure_packages "${BUILD_PACKAGES[@]}" "${POWER_PACKAGES[@]}"
use_vendor_mirrors
swift build --build-tests
INGEST_POWER=1 swift test --skip-build --no-parallel --filter 'PowerCutTests' "$@"
