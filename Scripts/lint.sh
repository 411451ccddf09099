#!/usr/bin/env bash
# Checks the formatting of every Swift file of the package with the
# toolchain's swift-format and the repository's .swift-format (4 spaces,
# lines of at most 140 columns where a line can be broken). Any finding
# fails the run (--strict).
#
# Usage: Scripts/lint.sh            check (what CI runs)
#        Scripts/lint.sh --fix      rewrite the files in place first
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Package.swift Sources Tests Samples Benchmarks Fuzz)
if [ "${1:-}" = "--fix" ]; then
    swift format format --in-place --parallel --recursive "${paths[@]}"
fi
swift format lint --strict --parallel --recursive "${paths[@]}"
echo "swift format lint: no findings"
