#!/usr/bin/env bash
# Memory cost of a large upload (issue 3, Files): starts the release
# server, uploads a file just under the 50 MB limit with curl, and prints
# the server's resident memory (VmRSS) and peak (VmHWM) before and after,
# from /proc (Linux).
#
#   bench/upload_rss.sh [size-in-bytes, default 49,000,000]
set -euo pipefail

cd "$(dirname "$0")/.."
SIZE="${1:-49000000}"
cargo build --release -q -p taskboard-server --bin taskboard-server
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"

WORK="$(mktemp -d)"
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

TASKBOARD_OWNER_PASSWORD=rss-password "$TARGET_DIR/release/taskboard-server" \
    --listen 127.0.0.1:0 --data-dir "$WORK/data" --log-level warn > "$WORK/out" 2> "$WORK/err" &
PID=$!
for _ in $(seq 1 200); do grep -q "listening on" "$WORK/out" 2>/dev/null && break; sleep 0.05; done
BASE="$(grep -o 'http://[0-9.:]*' "$WORK/out" | tail -1)"
TOKEN="$(curl -s -X POST "$BASE/api/v1/auth/login" -H 'content-type: application/json' \
    -d '{"login":"owner","password":"rss-password"}' | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')"

mem() { grep -E "^($1):" "/proc/$PID/status" | awk '{print $2}'; }
# Warm up the code paths of an upload with a small one, so the figure is
# the cost of the size and not of first use.
head -c 100000 /dev/urandom > "$WORK/small.bin"
curl -s -o /dev/null -H "Authorization: Bearer $TOKEN" -F "file=@$WORK/small.bin" "$BASE/api/v1/upload"
head -c "$SIZE" /dev/urandom > "$WORK/big.bin"

RSS_BEFORE="$(mem VmRSS)"; HWM_BEFORE="$(mem VmHWM)"
STATUS="$(curl -s -o "$WORK/answer" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    -F "file=@$WORK/big.bin" "$BASE/api/v1/upload")"
RSS_AFTER="$(mem VmRSS)"; HWM_AFTER="$(mem VmHWM)"

echo "upload of $SIZE bytes: HTTP $STATUS $(cat "$WORK/answer")"
echo "VmRSS before ${RSS_BEFORE} kB, after ${RSS_AFTER} kB"
echo "VmHWM before ${HWM_BEFORE} kB, after ${HWM_AFTER} kB (peak grew by $((HWM_AFTER - HWM_BEFORE)) kB)"
