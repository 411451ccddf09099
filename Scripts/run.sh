#!/usr/bin/env bash
# The main job. Installs missing Debian packages, builds in release mode and
# runs the benchmark executable, which prints DataIngest's figures next to
# their baselines.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/common.sh

ensure_packages "${BUILD_PACKAGES[@]}"

swift build -c release --product ingest-bench
.build/release/ingest-bench "$@"
