#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer and AddressSanitizer.
#
# Usage: Scripts/fuzz.sh [--seconds N] [--build-dir DIR] [--no-build] [target...]
#   targets: bson extjson segment deflate decrypt http upload jwt syslog
#            websocket syncmessage changeset (default: all)
#   --seconds N   run each target N seconds (default 60)
#   --build-dir   where the instrumented modules, binaries and working
#                 corpora go (default .build/fuzz; FUZZ_BUILD_DIR also works)
#   --no-build    reuse the binaries of a previous run
#
# The harnesses (Fuzz/<target>/main.swift) are not SwiftPM targets, so
# `swift build` and `swift test` never compile them. This script compiles
# IngestSupport, IngestCore, IngestHTTP, IngestServer, RealmSync and
# DataIngest (each only when a target needs it) directly with swiftc,
# instrumented with `-sanitize=fuzzer,address` (and -enable-testing, for the
# internal HTTP parser and ParsedSegment), plus swift-log's Logging module
# (which IngestHTTP, IngestServer and DataIngest import) and swift-metrics'
# CoreMetrics (DataIngest), from the checkouts `swift package resolve` makes,
# optimized, not instrumented, then links each harness against them.
# The syslog harness compiles the forwarder
# sample's Samples/LogForwarder/LineParser.swift into itself: the sample is an
# executable target, so there is no library of it to link.
#
# Each target runs with its committed seeds (Fuzz/corpus/<target>, read only)
# plus a working corpus in the build dir that grows across runs. A crash, a
# leak, a timeout (10 s per input) or running out of memory (2 GiB) stops the
# target, saves the input as <build-dir>/artifacts/<target>-crash-<sha1> and
# makes the script exit 1 after the remaining targets have run. Reproduce with
#   <build-dir>/fuzz-<target> <artifact>
# Fixed crashes are kept as regression tests (Tests/*/FuzzRegressionTests.swift).
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/common.sh

ALL_TARGETS=(bson extjson segment deflate decrypt http upload jwt syslog websocket syncmessage changeset)
seconds=60
build_dir="${FUZZ_BUILD_DIR:-.build/fuzz}"
build=1
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --build-dir) build_dir="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *)
            if [[ ! " ${ALL_TARGETS[*]} " == *" $1 "* ]]; then
                echo "unknown target $1 (targets: ${ALL_TARGETS[*]})" >&2; exit 2
            fi
            targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")

ensure_packages "${BUILD_PACKAGES[@]}"
use_vendor_mirrors
mkdir -p "$build_dir/artifacts"
build_dir="$(cd "$build_dir" && pwd)"

needs() {   # needs MODULE: true if a selected target links MODULE
    local target
    for target in "${targets[@]}"; do
        case "$1:$target" in
            IngestHTTP:http|IngestHTTP:upload|IngestHTTP:jwt|IngestServer:upload|IngestServer:jwt|DataIngest:syslog) return 0 ;;
            RealmSync:websocket|RealmSync:syncmessage|RealmSync:changeset|RealmSync:upload|RealmSync:jwt) return 0 ;;
        esac
    done
    return 1
}

# The linker warns about every ASan check symbol it cannot export; noise.
quiet() { "$@" 2>&1 | { grep -v "Cannot export local symbol" || true; }; return "${PIPESTATUS[0]}"; }

SWIFTC_FLAGS=(-swift-version 6 -O -sanitize=fuzzer,address -parse-as-library -package-name DataIngest)
# Every system library module IngestHTTP, IngestServer and DataIngest import (IngestServer
# imports CPostgres since the PostgreSQL sink; without it the server targets
# did not compile).
C_MODULES=(-I Sources/CZlib -I Sources/CCrypto -I Sources/CSQLite -I Sources/CLinux -I Sources/CPostgres)

# module_sources NAME: where a module's sources are: Sources/NAME, or the
# package checkout for the Swift package dependencies.
module_sources() {
    case "$1" in
        Logging) echo ".build/checkouts/swift-log/Sources/Logging" ;;
        CoreMetrics) echo ".build/checkouts/swift-metrics/Sources/CoreMetrics" ;;
        *) echo "Sources/$1" ;;
    esac
}

# module_package NAME: the module's package, for `package` access (swift-log's
# own `package` symbols, such as its Lock, must not meet the project's).
module_package() {
    case "$1" in
        Logging) echo "swift_log" ;;
        CoreMetrics) echo "swift_metrics" ;;
        *) echo "DataIngest" ;;
    esac
}

# build_module NAME "DEPENDENCIES" FLAGS...: a static library plus its
# module from its sources (module_sources), rebuilt when a source file is
# newer than the library, when the library of a module it imports
# (DEPENDENCIES) is, or when the flags changed.
build_module() {
    local name="$1" dependencies="$2" library="$build_dir/lib$1.a" directory
    directory=$(module_sources "$1")
    shift 2
    local flags="$* -package-name $(module_package "$name")" sources dependency stale=0
    sources=$(find "$directory" -name '*.swift' | sort)
    [ -f "$library" ] || stale=1
    [ -n "$(find "$directory" -name '*.swift' -newer "$library" 2>/dev/null | head -1)" ] && stale=1
    for dependency in $dependencies; do
        [ "$build_dir/lib$dependency.a" -nt "$library" ] && stale=1
    done
    [ "$(cat "$library.flags" 2>/dev/null)" = "$flags" ] || stale=1
    [ "$stale" -eq 1 ] || return 0
    echo "== compiling $name ($flags)"
    # shellcheck disable=SC2086
    quiet swiftc "$@" -parse-as-library -package-name "$(module_package "$name")" -module-name "$name" \
        -emit-library -static -o "$library.tmp" \
        -emit-module -emit-module-path "$build_dir/$name.swiftmodule" \
        -I "$build_dir" "${C_MODULES[@]}" $sources
    # Only a complete compile replaces the library (a failed one may leave output).
    mv "$library.tmp" "$library"
    echo "$flags" >"$library.flags"
}

# The parsers' modules are instrumented (coverage + ASan), optimized as they
# ship. DataIngest only gives the syslog harness the `AnyRealmValue` enum that
# LineParser fills in, so it is compiled plain and unoptimized: instrumenting
# and optimizing its 10,000 lines was the slowest step of the whole build,
# for no coverage of the parser (which is compiled, instrumented, into the
# harness).
INSTRUMENTED=(-swift-version 6 -O -wmo -sanitize=fuzzer,address -enable-testing)
PLAIN=(-swift-version 6 -Onone)

if [ "$build" -eq 1 ]; then
    build_module IngestSupport "" "${INSTRUMENTED[@]}"
    build_module IngestCore "IngestSupport" "${INSTRUMENTED[@]}"
    if needs IngestHTTP; then
        [ -d "$(module_sources Logging)" ] || swift package resolve
        build_module Logging "" -swift-version 6 -O -wmo
        build_module IngestHTTP "IngestSupport Logging" "${INSTRUMENTED[@]}"
    fi
    if needs RealmSync; then build_module RealmSync "IngestSupport IngestCore" "${INSTRUMENTED[@]}"; fi
    if needs IngestServer; then build_module IngestServer "IngestSupport IngestCore IngestHTTP RealmSync Logging" "${INSTRUMENTED[@]}"; fi
    if needs DataIngest; then
        [ -d "$(module_sources CoreMetrics)" ] || swift package resolve
        build_module Logging "" -swift-version 6 -O -wmo
        build_module CoreMetrics "" -swift-version 6 -O -wmo
        build_module DataIngest "IngestSupport IngestCore Logging CoreMetrics" "${PLAIN[@]}"
    fi
    for target in "${targets[@]}"; do
        libraries=(-lIngestCore -lIngestSupport -lsqlite3 -lz -lcrypto)
        sources=("Fuzz/$target/main.swift")
        case "$target" in
            http) libraries=(-lIngestHTTP -lLogging -lIngestSupport -lsqlite3 -lz -lcrypto) ;;
            upload|jwt)
                libraries=(-lIngestServer -lRealmSync -lIngestHTTP -lLogging -lIngestCore -lIngestSupport -lpq -lsqlite3 -lz -lcrypto) ;;
            websocket|syncmessage|changeset) libraries=(-lRealmSync -lIngestCore -lIngestSupport -lsqlite3 -lz -lcrypto) ;;
            syslog)
                libraries=(-lDataIngest -lLogging -lCoreMetrics -lIngestCore -lIngestSupport -lsqlite3 -lz -lcrypto)
                sources+=(Samples/LogForwarder/LineParser.swift) ;;
        esac
        echo "== linking fuzz-$target"
        quiet swiftc "${SWIFTC_FLAGS[@]}" -I "$build_dir" "${C_MODULES[@]}" "${sources[@]}" \
            -L "$build_dir" "${libraries[@]}" -o "$build_dir/fuzz-$target"
    done
fi

# Swift's own crash backtracer would take SIGILL (a Swift runtime trap)
# before libFuzzer's handler, which then saves no input.
export SWIFT_BACKTRACE=enable=no
# Leaks made inside the toolchain's own libraries, each explained in the file.
export LSAN_OPTIONS="suppressions=$PWD/Fuzz/lsan-suppressions.txt ${LSAN_OPTIONS:-}"

failed=()
for target in "${targets[@]}"; do
    work="$build_dir/corpus/$target"
    mkdir -p "$work"
    log="$build_dir/fuzz-$target.log"
    echo "== fuzzing $target for ${seconds}s (log: $log)"
    status=0
    "$build_dir/fuzz-$target" "$work" "Fuzz/corpus/$target" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$build_dir/artifacts/$target-" >"$log" 2>&1 || status=$?
    grep -E "^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || true
    if [ "$status" -ne 0 ]; then
        echo "!! $target failed (exit $status); the input is saved:"
        grep -E "^(==[0-9]+==ERROR|SUMMARY|Fatal error|.*Test unit written to)" "$log" | head -5 || true
        failed+=("$target")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzing found failures in: ${failed[*]}"
    exit 1
fi
echo "fuzzing: no failures in ${targets[*]}"
