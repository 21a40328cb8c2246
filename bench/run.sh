#!/usr/bin/env bash
# Load benchmark of taskboard-server (issue 3), in one command:
#
#   bench/run.sh
#
# Builds the release server, a bare hyper hello-world (the baseline) and a
# seeding program; prepares a board of 10,000 tasks (one project holding
# 1,000); starts both servers on loopback and drives each scenario with wrk
# (64 connections). Prints req/s and p99 per scenario, and each read's
# ratio to the baseline.
#
# Environment: BENCH_DURATION (seconds per scenario, default 10),
# BENCH_CONNECTIONS (default 64), BENCH_THREADS (wrk threads, default 2).
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION="${BENCH_DURATION:-10}"
CONNECTIONS="${BENCH_CONNECTIONS:-64}"
THREADS="${BENCH_THREADS:-2}"

if ! command -v wrk >/dev/null 2>&1; then
    echo "installing wrk …" >&2
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq && $SUDO apt-get install -y -qq wrk
    else
        echo "wrk is missing and apt-get is not available; install wrk and rerun" >&2
        exit 1
    fi
fi

echo "building (release) …" >&2
cargo build --release -q -p taskboard-server --bin taskboard-server --example bare --example seed
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
BIN="$TARGET_DIR/release"

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

echo "seeding 10,000 tasks …" >&2
"$BIN/examples/seed" "$WORK/data" > "$WORK/seed.env"
# shellcheck disable=SC1091
source "$WORK/seed.env"

# Starts a program that prints "listening on http://IP:PORT" and waits
# until it is accepting; its address is left in $WORK/<name>.addr. Not run
# in a subshell, so PIDS keeps the process for the cleanup.
start() {
    local name="$1"; shift
    "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
    PIDS+=("$!")
    for _ in $(seq 1 200); do
        if grep -q "listening on http://" "$WORK/$name.out" 2>/dev/null; then
            grep -o "http://[0-9.:]*" "$WORK/$name.out" | tail -1 > "$WORK/$name.addr"
            return
        fi
        sleep 0.05
    done
    echo "$name did not start:" >&2
    cat "$WORK/$name.err" >&2
    exit 1
}

start server "$BIN/taskboard-server" --listen 127.0.0.1:0 --data-dir "$WORK/data" --log-level warn
start bare "$BIN/examples/bare" 127.0.0.1:0
SERVER="$(cat "$WORK/server.addr")"
BARE="$(cat "$WORK/bare.addr")"

cat > "$WORK/post_task.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title": "created under load", "priority": "high"}'
EOF
cat > "$WORK/post_message.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"chat_id": "$CHAT_ID", "content": "hello from the benchmark"}'
EOF

# Runs wrk; prints "req/s p99_ms non2xx".
load() {
    local url="$1"; shift
    local out
    out="$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" "$url")"
    local rps p99 bad
    rps="$(echo "$out" | awk '/Requests\/sec/ {print $2}')"
    p99="$(echo "$out" | awk '$1 == "99%" {print $2}')"
    bad="$(echo "$out" | awk '/Non-2xx/ {print $NF}')"
    echo "$rps ${p99:-?} ${bad:-0}"
}

# p99 as wrk prints it (e.g. 1.23ms, 850.00us, 1.02s) → milliseconds.
to_ms() {
    awk -v v="$1" 'BEGIN {
        if (v ~ /us$/) { sub(/us$/, "", v); printf "%.2f", v / 1000 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.2f", v }
        else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.2f", v * 1000 }
        else { print v }
    }'
}

AUTH=(-H "Authorization: Bearer $TOKEN")
echo "driving each scenario for ${DURATION}s with $CONNECTIONS connections …" >&2
read -r BARE_RPS BARE_P99 _ <<< "$(load "$BARE/")"

printf "\n%-44s %12s %10s %10s\n" "scenario" "req/s" "p99 ms" "vs bare"
printf "%-44s %12.0f %10s %10s\n" "bare hyper hello-world (baseline)" "$BARE_RPS" "$(to_ms "$BARE_P99")" "1.00"

row() {
    local label="$1" read="$2"; shift 2
    local rps p99 bad ratio="-"
    read -r rps p99 bad <<< "$(load "$@")"
    if [ "$read" = "read" ]; then ratio="$(awk -v a="$rps" -v b="$BARE_RPS" 'BEGIN {printf "%.2f", a / b}')"; fi
    printf "%-44s %12.0f %10s %10s" "$label" "$rps" "$(to_ms "$p99")" "$ratio"
    if [ "$bad" != "0" ]; then printf "   (%s non-2xx answers!)" "$bad"; fi
    printf "\n"
}

row "GET /health" read "$SERVER/health"
row "GET /tasks/{id} (agent token)" read "$SERVER/api/v1/tasks/$TASK_ID" "${AUTH[@]}"
row "GET /tasks?project_id=...&status=todo" read "$SERVER/api/v1/tasks?project_id=$PROJECT_ID&status=todo" "${AUTH[@]}"
row "POST /tasks (durable)" write "$SERVER/api/v1/tasks?project_id=$LOAD_PROJECT_ID" "${AUTH[@]}" -s "$WORK/post_task.lua"
row "POST /messages (durable)" write "$SERVER/api/v1/messages" "${AUTH[@]}" -s "$WORK/post_message.lua"
echo
echo "targets: GET /tasks/{id} >= 0.60 of the baseline; POST /tasks >= 5,000/s"
