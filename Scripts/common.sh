# Shared by the project's scripts: find the Swift toolchain and install the
# Debian packages a script needs when they are missing.

# The toolchain lives in /opt/swift on the project's machines.
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

# ensure_packages PKG...: installs the packages that dpkg does not list as installed.
ensure_packages() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}

# use_vendor_mirrors: on machines that cannot reach GitHub, the project's
# three Swift package dependencies come from the bare git mirrors in
# ../shared/vendor (next to the checkout). When that folder exists, SwiftPM is
# pointed at it with `swift package config set-mirror` (the setting lives in
# .swiftpm/configuration/mirrors.json, machine-specific and not committed);
# when it does not, resolution is left alone and SwiftPM fetches the GitHub
# URLs of Package.swift. A mirror that git cannot open as it is (a copy that
# lost its empty refs/ folder) is opened through a small bare repository under
# .build/vendor-mirrors that borrows its objects (objects/info/alternates).
VENDOR_PACKAGES=(apple/swift-log apple/swift-argument-parser apple/swift-metrics)
use_vendor_mirrors() {
    local vendor
    vendor="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/vendor"
    [ -d "$vendor" ] || return 0
    local package name mirror
    for package in "${VENDOR_PACKAGES[@]}"; do
        name="${package#*/}"
        mirror="$vendor/$name.git"
        [ -d "$mirror" ] || { echo "use_vendor_mirrors: $mirror is missing" >&2; return 1; }
        if ! git -C "$mirror" rev-parse --git-dir >/dev/null 2>&1; then
            local opened=".build/vendor-mirrors/$name.git"
            if ! git -C "$opened" rev-parse --git-dir >/dev/null 2>&1; then
                rm -rf "$opened"
                mkdir -p "$opened/refs" "$opened/objects/info"
                cp "$mirror/HEAD" "$mirror/packed-refs" "$mirror/config" "$opened/"
                echo "$mirror/objects" > "$opened/objects/info/alternates"
            fi
            mirror="$(cd "$opened" && pwd)"
        fi
        swift package config set-mirror \
            --original "https://github.com/$package.git" --mirror "$mirror"
    done
}

# What building needs: git (SwiftPM fetches the Swift packages with it) and
# the C libraries the package links against.
BUILD_PACKAGES=(git pkg-config libsqlite3-dev zlib1g-dev libssl-dev libpq-dev)

# The power-cut harness's guest (Scripts/power-guest.sh, PowerCutTests): qemu
# with software emulation, Debian's kernel (its postinst builds an initramfs
# in /boot, which the harness does not use), a static busybox, and the tools
# that make its disks. About a minute to install on a fresh machine.
POWER_PACKAGES=(qemu-system-x86 linux-image-amd64 busybox-static e2fsprogs xfsprogs cpio kmod xz-utils)

# ensure_schemathesis: schemathesis (PyPI, a pinned version) in a virtual
# environment under .build, for the test that checks Docs/openapi.yaml
# against a real server (Tests/IngestServerTests/OpenAPITests.swift).
# Installed once, reused while the version matches; exports
# INGEST_TEST_SCHEMATHESIS, the path of its command.
SCHEMATHESIS_VERSION=4.32.5
ensure_schemathesis() {
    local venv=.build/schemathesis-venv
    if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -qF "$SCHEMATHESIS_VERSION"; then
        echo "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
        python3 -m venv --help >/dev/null 2>&1 || ensure_packages python3-venv
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q "schemathesis==$SCHEMATHESIS_VERSION"
    fi
    export INGEST_TEST_SCHEMATHESIS="$PWD/$venv/bin/schemathesis"
}

# start_test_services: the services the sink tests need (owned by
# Scripts/services/): a throwaway PostgreSQL and ClickHouse on 127.0.0.1,
# stopped by PID when the calling script exits (an EXIT trap; the caller
# must not set its own). Exports INGEST_TEST_POSTGRES_URL,
# INGEST_TEST_CLICKHOUSE_URL and INGEST_TEST_HAPROXY; tests that need them
# are skipped only when those are absent.
start_test_services() {
    ensure_packages postgresql clickhouse-server util-linux haproxy
    export INGEST_TEST_HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)   # the load-balancer test starts its own
    TEST_SERVICES_DIR=$(mktemp -d /tmp/dataingest-services.XXXXXX)
    chmod 755 "$TEST_SERVICES_DIR"   # the services run as their own users
    trap stop_test_services EXIT
    Scripts/services/postgres.sh start "$TEST_SERVICES_DIR/postgres"
    source "$TEST_SERVICES_DIR/postgres/postgres.env"
    Scripts/services/clickhouse.sh start "$TEST_SERVICES_DIR/clickhouse"
    source "$TEST_SERVICES_DIR/clickhouse/clickhouse.env"
}

stop_test_services() {
    [ -n "${TEST_SERVICES_DIR:-}" ] || return 0
    Scripts/services/postgres.sh stop "$TEST_SERVICES_DIR/postgres" || true
    Scripts/services/clickhouse.sh stop "$TEST_SERVICES_DIR/clickhouse" || true
    rm -rf "$TEST_SERVICES_DIR"
}

# run_watched COMMAND...: runs the command, its output passed through; if the
# output stays silent for INGEST_STALL_SECONDS (default 300: no test is that
# quiet), prints once what would explain a hang: every process, and for each
# test process (an .xctest executable) its threads' wait channels and
# system calls, its descriptors with the other processes holding the same
# pipe or socket, and (when gdb is installed) every thread's backtrace. The
# command's status is returned; the caller's step bound still ends a hung run.
run_watched() {
    local log status_file
    log=$(mktemp /tmp/dataingest-watched.XXXXXX)
    status_file="$log.status"
    { "$@" 2>&1 && echo 0 > "$status_file" || echo $? > "$status_file"; } | tee "$log" &
    local pipeline=$! reported=0
    while kill -0 "$pipeline" 2>/dev/null; do
        sleep 5
        [ "$reported" = 0 ] || continue
        if [ $(( $(date +%s) - $(stat -c %Y "$log") )) -ge "${INGEST_STALL_SECONDS:-300}" ]; then
            reported=1
            echo "== run_watched: no output for ${INGEST_STALL_SECONDS:-300} s; every process:"
            ps -eo pid,ppid,etimes,stat,args --forest || true
            for pid in $(pgrep -f 'xctest' || true); do
                [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == *.xctest ]] || continue
                echo "== run_watched: test process $pid, its threads (name, wait channel, system call and first arguments):"
                for task in /proc/"$pid"/task/*; do
                    echo "  $(cat "$task/comm" 2>/dev/null) $(cat "$task/wchan" 2>/dev/null) $(cut -d' ' -f1-3 "$task/syscall" 2>/dev/null)"
                done
                echo "== run_watched: its descriptors, with the other processes holding the same pipe or socket:"
                for fd in /proc/"$pid"/fd/*; do
                    local target holders=""
                    target=$(readlink "$fd" 2>/dev/null) || continue
                    case "$target" in pipe:* | socket:*)
                        local pattern=${target//[/\\[}
                        holders=$(find /proc/[0-9]*/fd -lname "${pattern//]/\\]}" 2>/dev/null | cut -d/ -f3 | sort -u | grep -vx "$pid" | tr '\n' ' ' || true) ;;
                    esac
                    echo "  ${fd##*/} -> $target${holders:+ (also held by $holders)}"
                done
                if command -v gdb > /dev/null; then
                    timeout 120 gdb -batch -p "$pid" -ex 'thread apply all bt' 2>&1 | head -300 || true
                fi
            done
        fi
    done
    wait "$pipeline" || true
    local status
    status=$(cat "$status_file" 2>/dev/null || echo 1)
    rm -f "$log" "$status_file"
    return "$status"
}
