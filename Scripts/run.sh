#!/usr/bin/env bash
# The main command: installs missing Debian packages, builds the server and
# the WeatherStation sample in release mode, starts ingest-server (development
# mode, embedded SQLite in a temporary directory), streams weather readings
# into it for a short while, shows what landed in the database and stops the
# server.
#
#   Scripts/run.sh [--duration S | --count N] [--rate N] [--port N] [--keep-running] [--keep-data]
#
#   --duration S     how long the station streams (default 10 s)
#   --count N        stream N readings instead of a duration
#   --rate N         readings per second (default 50)
#   --port N         the server's port (default 0: a free one)
#   --keep-running   leave the server running afterwards (status page) until Ctrl-C
#   --keep-data      keep the temporary directory (database, logs) at the end
#   --debug          build in debug mode (quicker to build, slower to run)
#
# Exit status: 0 when every reading the station wrote is in the database once.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/common.sh

duration=10
count=""
rate=50
port=0
keep_running=0
keep_data=0
configuration=release
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) duration="$2"; shift 2 ;;
        --count) count="$2"; shift 2 ;;
        --rate) rate="$2"; shift 2 ;;
        --port) port="$2"; shift 2 ;;
        --keep-running) keep_running=1; shift ;;
        --keep-data) keep_data=1; shift ;;
        --debug) configuration=debug; shift ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done

ensure_packages "${BUILD_PACKAGES[@]}" sqlite3
use_vendor_mirrors

echo "== building ($configuration)"
swift build -c "$configuration" --product ingest-server
swift build -c "$configuration" --product WeatherStation
bin="$(swift build -c "$configuration" --show-bin-path)"

work="$(mktemp -d "${TMPDIR:-/tmp}/dataingest-run.XXXXXX")"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        # Graceful stop: in-flight uploads finish; SIGKILL after 15 s at most.
        for _ in $(seq 1 150); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$server_pid" 2>/dev/null && kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        echo "server (pid $server_pid) stopped"
    fi
    if [ "$keep_data" = 1 ]; then
        echo "data kept in $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== starting ingest-server (development mode, data in $work/ingest-data)"
"$bin/ingest-server" --port "$port" --data-dir "$work/ingest-data" >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
url=""
for _ in $(seq 1 300); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "ingest-server exited during start-up:" >&2
        cat "$work/server.log" >&2
        exit 1
    fi
    line="$(head -n 1 "$work/server.out" 2>/dev/null || true)"
    case "$line" in
        "listening on "*) url="${line#listening on }"; break ;;
    esac
    sleep 0.1
done
if [ -z "$url" ]; then
    echo "ingest-server did not report its address within 30 s:" >&2
    cat "$work/server.log" >&2
    exit 1
fi
app_id="$(cat "$work/ingest-data/development-app-id")"
echo "server pid $server_pid listening on $url, app id $app_id"

echo "== running WeatherStation ($rate readings/s, ${count:+$count readings}${count:-$duration s})"
station_args=(--app-id "$app_id" --base-url "$url" --rate "$rate" --data-dir "$work/station")
if [ -n "$count" ]; then station_args+=(--count "$count"); else station_args+=(--duration "$duration"); fi
"$bin/WeatherStation" "${station_args[@]}" | tee "$work/station.out"
written="$(sed -n 's/^wrote \([0-9]*\) readings.*/\1/p' "$work/station.out")"

db="$work/ingest-data/$app_id.sqlite"
echo
echo "== what landed in $db"
sqlite3 -header -column "$db" \
    "SELECT count(*) AS readings, count(DISTINCT _id) AS distinct_ids, count(DISTINCT deviceId) AS devices,
            round(min(temperatureInFahrenheit), 1) AS min_temp_f, round(max(temperatureInFahrenheit), 1) AS max_temp_f,
            round(avg(barometricPressureInHg), 2) AS avg_pressure_inhg, max(windSpeedInMph) AS max_wind_mph
     FROM WeatherSensor;"
echo
echo "latest readings:"
sqlite3 -header -column "$db" \
    "SELECT hex(_id) AS _id, deviceId, round(temperatureInFahrenheit, 1) AS temperatureInFahrenheit,
            round(barometricPressureInHg, 2) AS barometricPressureInHg, windSpeedInMph,
            strftime('%H:%M:%f', _ingested_at / 1000.0, 'unixepoch') AS ingested_at_utc
     FROM WeatherSensor ORDER BY _id DESC LIMIT 5;"
echo
sqlite3 "$db" "SELECT 'segments received: ' || count(*) || ', objects in them: ' || sum(object_count) FROM _dataingest_receipts;"

stored="$(sqlite3 "$db" "SELECT count(*) FROM WeatherSensor;")"
echo
echo "status page: $url/   metrics: $url/metrics"
status=0
if [ -n "$written" ] && [ "$stored" = "$written" ]; then
    echo "OK: the station wrote $written readings and the database holds $stored, each once"
else
    echo "MISMATCH: the station wrote ${written:-?} readings, the database holds $stored" >&2
    status=1
fi

if [ "$keep_running" = 1 ]; then
    echo "the server keeps running (pid $server_pid); open $url/ and press Ctrl-C to stop it"
    wait "$server_pid" || true
fi
exit $status
