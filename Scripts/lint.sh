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
# Left out: the seed page's program, kept line for line as the page has it
# (SeedProgramTests checks that).
mapfile -t files < <(find Package.swift Sources Tests Samples Benchmarks Fuzz -name '*.swift' \
    -not -path 'Tests/Support/seed-program/*' | sort)
if [ "${1:-}" = "--fix" ]; then
    swift format format --in-place --parallel "${files[@]}"
fi
swift format lint --strict --parallel "${files[@]}"
echo "swift format lint: no findings"
