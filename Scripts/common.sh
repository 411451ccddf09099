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

# The C libraries the package links against.
BUILD_PACKAGES=(pkg-config libsqlite3-dev zlib1g-dev libssl-dev libpq-dev)
