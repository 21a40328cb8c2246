#!/usr/bin/env bash
# Start-up and memory of a server whose board holds a large chat (issue 8,
# memory), in one command:
#
#   bench/events_rss.sh [N, default 10000] [BYTES, default 100000]
#
# Writes N chat messages of BYTES each through the core (release build),
# then starts the release server on that board, as after a restart, and
# reports: the time from start to the first served request (GET
# /health answered), the server's resident memory (VmRSS) then and
# after a first real request (an agent reads the last 50 messages of the
# chat), its peak (VmHWM), and the size of board.redb against the content
# bytes. The same steps with N messages of 100 bytes are the baseline,
# measured in the same run. The bar: the first request within 1 s and
# RSS under 150 MB, whatever the size of the messages. Linux (/proc).
set -euo pipefail

cd "$(dirname "$0")/.."
N="${1:-10000}"
BYTES="${2:-100000}"

echo "building (release) …" >&2
cargo build --release -q -p taskboard-server --bin taskboard-server
cargo build --release -q -p taskboard-core --example store_size
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
BIN="$TARGET_DIR/release"

WORK="$(mktemp -d)"
PID=""
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
mem_kb() { grep -E "^$1:" "/proc/$PID/status" | awk '{print $2}'; }

# measure NAME SIZE: fills a board, restarts a server on it, prints one
# report line and leaves its figures in NAME_* variables.
measure() {
    local name="$1" size="$2" dir="$WORK/$1"
    echo "writing $N chat messages of $size bytes ($name) …" >&2
    "$BIN/examples/store_size" "$N" "$size" text "$dir" > "$WORK/$name.env"
    # shellcheck disable=SC1090
    source "$WORK/$name.env"
    local db_bytes
    db_bytes="$(stat -c %s "$dir/board.redb")"

    local start first base=""
    start="$(now_ms)"
    "$BIN/taskboard-server" --listen 127.0.0.1:0 --data-dir "$dir" --log-level warn \
        > "$WORK/$name.out" 2> "$WORK/$name.err" &
    PID=$!
    while true; do
        if [ -z "$base" ]; then
            base="$(grep -o 'http://[0-9.:]*' "$WORK/$name.out" 2>/dev/null | tail -1 || true)"
        fi
        if [ -n "$base" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health")" = 200 ]; then
            break
        fi
        kill -0 "$PID" 2>/dev/null || { echo "the server stopped:" >&2; cat "$WORK/$name.err" >&2; exit 1; }
        [ $(( $(now_ms) - start )) -lt 60000 ] || { echo "no answer within 60 s" >&2; exit 1; }
        sleep 0.005
    done
    first="$(now_ms)"
    local rss_start rss_request hwm status
    rss_start="$(mem_kb VmRSS)"
    status="$(curl -s -o "$WORK/$name.messages" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
        "$base/api/v1/messages?chat_id=$CHAT_ID&limit=50")"
    [ "$status" = 200 ] || { echo "reading messages answered $status" >&2; exit 1; }
    rss_request="$(mem_kb VmRSS)"
    hwm="$(mem_kb VmHWM)"
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""

    printf '%-9s first request after %5d ms; RSS %4d MB after start, %4d MB after the first read (peak %4d MB); board.redb %6.1f MB = %5.2f x content (%6.1f MB)\n' \
        "$name" "$((first - start))" "$((rss_start / 1024))" "$((rss_request / 1024))" "$((hwm / 1024))" \
        "$(echo "$db_bytes / 1000000" | bc -l)" "$(echo "$db_bytes / $CONTENT_BYTES" | bc -l)" \
        "$(echo "$CONTENT_BYTES / 1000000" | bc -l)"
    eval "${name}_MS=$((first - start)) ${name}_RSS=$rss_request ${name}_HWM=$hwm"
}

echo "$N chat messages; the baseline's are 100 bytes, the large ones $BYTES bytes"
measure baseline 100
measure large "$BYTES"
# shellcheck disable=SC2154
echo "large / baseline: start-up $(echo "scale=2; $large_MS / ($baseline_MS + 0.001)" | bc) x," \
    "RSS after the first read $(echo "scale=2; $large_RSS / $baseline_RSS" | bc) x," \
    "peak RSS $(echo "scale=2; $large_HWM / $baseline_HWM" | bc) x"
if [ "$large_MS" -le 1000 ] && [ "$large_RSS" -lt $((150 * 1024)) ]; then
    echo "bar met: first request within 1 s, RSS under 150 MB"
else
    echo "bar NOT met: first request within 1 s and RSS under 150 MB"
fi
