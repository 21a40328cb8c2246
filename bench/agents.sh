#!/usr/bin/env bash
# Benchmark of the agent work protocol (issue 11): a release server in its
# own process and the load client `taskboard-server/examples/agents_load.rs`.
#
#   bench/agents.sh
#
# Prints: the baseline (GET /health from 64 connections, this machine's
# ceiling in this run); claim throughput and p50/p99 with 64 agents over
# 1,000 ready tasks (every task claimed once, then 204s); replayed
# idempotent POST req/s and its ratio to the baseline; long-poll wake-up
# latency p50/p99 from a write to the waiting client.
#
# Knobs (environment): CLAIMERS (64), TASKS (1000), BENCH_SECONDS (5), WAKEUPS (200).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet -p taskboard-server --bin taskboard-server --example agents_load
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
bin="$TARGET_DIR/release/taskboard-server"
load="$TARGET_DIR/release/examples/agents_load"

data=$(mktemp -d)
log="$data/server.log"
export TASKBOARD_OWNER_PASSWORD="bench-password-$$"
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$data"
}
trap cleanup EXIT

TASKBOARD_LOG_LEVEL=warn "$bin" --listen 127.0.0.1:0 --data-dir "$data/board" >"$log" 2>&1 &
server=$!
url=""
for _ in $(seq 1 200); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$log" | head -1 | sed 's/listening on //') || true
    [ -n "$url" ] && break
    kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.05
done
[ -n "$url" ] || { echo "the server did not start" >&2; cat "$log" >&2; exit 1; }
echo "server $url (release), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

"$load" --url "$url" --claimers "${CLAIMERS:-64}" --tasks "${TASKS:-1000}" \
    --seconds "${BENCH_SECONDS:-5}" --wakeups "${WAKEUPS:-200}"
