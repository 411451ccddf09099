#!/usr/bin/env bash
# Runs the test suite under ThreadSanitizer or AddressSanitizer.
#
# Usage: Scripts/sanitize.sh [thread|address] [--filter REGEX] [--skip REGEX] [--scratch-path DIR] [--no-build] [--no-services]
#   thread (default)  swift test --sanitize=thread
#   address           swift test --sanitize=address (leak detection stays off:
#                     the Swift runtime's metadata caches are never freed)
#   --filter REGEX    passed to `swift test --filter`, e.g. 'Store|HTTP'
#   --skip REGEX      passed to `swift test --skip`: suites left out
#   --scratch-path    build directory (default .build/<sanitizer>): separate from
#                     the normal .build, so the two never rebuild each other
#                     and a sanitized build never blocks the normal one
#   --no-services     do not start PostgreSQL and ClickHouse (their tests are
#                     then skipped, and say so); by default they are started
#                     as Scripts/test.sh does and stopped by PID at exit
#
# Tests run one at a time (--no-parallel), as in Scripts/test.sh: many start
# real processes and wait on them with time bounds.
#
# Any sanitizer report fails the run: TSan and ASan make the test process exit
# non-zero when they reported something (TSan's exitcode, ASan's abort), and
# the script also fails if a report appears anywhere in the test output or in
# <scratch>/sanitizer-reports/, where every instrumented process writes its
# reports (log_path): the test runner and the child processes the tests start
# (the ingest-server, the samples, the crash children), whose own output the
# tests often discard.
#
# Suppressions: none. Scripts/tsan-suppressions.txt exists for known,
# explained false positives only (each with its reason); it is empty because
# the project's locks (pthread-based Lock/LockedBox, NSLock, Dispatch) are
# all visible to TSan. Do not suppress a real race: fix it.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/common.sh

sanitizer=thread
filter=()
scratch=""
build=1
services=1
while [ $# -gt 0 ]; do
    case "$1" in
        thread|address) sanitizer="$1"; shift ;;
        --filter) filter+=(--filter "$2"); shift 2 ;;
        --skip) filter+=(--skip "$2"); shift 2 ;;
        --scratch-path) scratch="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        --no-services) services=0; shift ;;
        -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
scratch="${scratch:-.build/$sanitizer}"
mkdir -p "$scratch"
scratch="$(cd "$scratch" && pwd)"
reports_dir="$scratch/sanitizer-reports"
rm -rf "$reports_dir"
mkdir -p "$reports_dir"

ensure_packages "${BUILD_PACKAGES[@]}" curl python3 sqlite3 openssl gzip
use_vendor_mirrors

case "$sanitizer" in
    thread)
        # halt_on_error=0: report every race of a run, then fail at exit (exitcode 66).
        export TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 suppressions=$PWD/Scripts/tsan-suppressions.txt log_path=$reports_dir/tsan ${TSAN_OPTIONS:-}"
        ;;
    address)
        export ASAN_OPTIONS="detect_leaks=0 abort_on_error=0 log_path=$reports_dir/asan ${ASAN_OPTIONS:-}"
        ;;
esac

if [ "$build" -eq 1 ]; then
    swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch"
fi
if [ "$services" -eq 1 ]; then
    start_test_services   # stopped by PID when this script exits
fi
log="$scratch/sanitize-$sanitizer.log"
status=0
swift test --skip-build --no-parallel --sanitize="$sanitizer" --scratch-path "$scratch" "${filter[@]}" 2>&1 | tee "$log" || status=$?

pattern="WARNING: ThreadSanitizer|ERROR: AddressSanitizer"
reports=$(cat "$log" "$reports_dir"/* 2>/dev/null | grep -cE "$pattern" || true)
if [ "$reports" -gt 0 ]; then
    echo "$sanitizer sanitizer: $reports report(s); see $log and $reports_dir/ (one file per process)"
    cat "$log" "$reports_dir"/* 2>/dev/null | grep -E "SUMMARY: (ThreadSanitizer|AddressSanitizer)" | sort | uniq -c || true
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "tests failed under the $sanitizer sanitizer (exit $status); see $log"
    exit "$status"
fi
echo "$sanitizer sanitizer: clean"
