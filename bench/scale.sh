#!/usr/bin/env bash
# Scale benchmark (issue 10), in one command:
#
#   bench/scale.sh                 # boards of 10,000 and 1,000,000 tasks
#   SCALE_SIZES="10000 100000" bench/scale.sh
#
# For each size: seeds a board (one project `big` holding the tasks, and
# 100 small projects of 10 tasks) through the core in large batches,
# measures how long the release server takes to answer after start, then
# drives it with tests/examples/scale_probe.rs: p50/p99 of get task, the
# first page (50) of the project, filtered by status and by label, the
# page at depth 500,000 (half the project on a smaller board) by cursor
# and by offset, a key lookup, a title search, the last 50 chat messages,
# and durable creation at 64 connections; server RSS after each phase.
# Prints the table and the ratio of the largest board to the smallest
# for every scenario (paged reads must stay ≤ 1.5).
set -euo pipefail

cd "$(dirname "$0")/.."
SIZES="${SCALE_SIZES:-10000 1000000}"

echo "building (release) …" >&2
cargo build --release -q -p taskboard-server --bin taskboard-server \
    -p taskboard-tests --example seed_tasks --example scale_probe
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
BIN="$TARGET_DIR/release"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/taskboard-scale.XXXXXX")"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

for n in $SIZES; do
    echo "seeding $n tasks …" >&2
    "$BIN/examples/seed_tasks" "$WORK/board-$n" "$n" 100 > "$WORK/seed-$n.env" 2> "$WORK/seed-$n.err"
    cat "$WORK/seed-$n.err" >&2
    # shellcheck disable=SC1090
    source "$WORK/seed-$n.env"
    echo "board: $(du -sh "$WORK/board-$n" | cut -f1)" >&2

    started=$(date +%s%N)
    "$BIN/taskboard-server" --listen 127.0.0.1:0 --data-dir "$WORK/board-$n" --log-level warn \
        > "$WORK/server-$n.out" 2> "$WORK/server-$n.err" &
    SERVER_PID=$!
    ADDR=""
    for _ in $(seq 1 2000); do
        ADDR="$(grep -o "http://[0-9.:]*" "$WORK/server-$n.out" 2>/dev/null | tail -1 || true)"
        if [ -n "$ADDR" ] && curl -sf -o /dev/null -H "Authorization: Bearer $TOKEN" "$ADDR/api/v1/members/me"; then
            break
        fi
        sleep 0.01
    done
    ready_ms=$(( ($(date +%s%N) - started) / 1000000 ))
    echo "ready_to_serve $ready_ms 0 0" > "$WORK/probe-$n.txt"
    "$BIN/examples/scale_probe" "$ADDR" "$TOKEN" "$PROJECT_ID" "$CHAT_ID" "$n" "$SERVER_PID" >> "$WORK/probe-$n.txt"
    kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
    rm -rf "$WORK/board-$n"
done

set -- $SIZES
SMALL="$1"; LARGE="${!#}"
echo
printf "%-18s | %22s | %22s | %s\n" "scenario (ms)" "$SMALL: p50 / p99 / RSS MB" "$LARGE: p50 / p99 / RSS MB" "ratio p50 (p99)"
printf -- "-------------------+------------------------+------------------------+----------------\n"
while read -r name p50 p99 rss; do
    read -r _ lp50 lp99 lrss < <(grep "^$name " "$WORK/probe-$LARGE.txt")
    ratio=$(awk -v a="$p50" -v b="$lp50" -v c="$p99" -v d="$lp99" \
        'BEGIN { if (a > 0) printf "%.2f (%.2f)", b / a, (c > 0 ? d / c : 0); else print "-" }')
    printf "%-18s | %8s %6s %6s | %8s %6s %6s | %s\n" "$name" "$p50" "$p99" "$rss" "$lp50" "$lp99" "$lrss" "$ratio"
done < "$WORK/probe-$SMALL.txt"
echo "(ready_to_serve: ms from start to the first answer; create_rate: tasks/s, its ratio is large/small)"
