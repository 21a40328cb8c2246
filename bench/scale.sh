#!/usr/bin/env bash
# Scale benchmark (issue 10), in one command:
#
#   bench/scale.sh                 # boards of 10,000 and 1,000,000 tasks
#   SCALE_SIZES="10000 100000" bench/scale.sh
#
# Seeds one board per size (one project `big` holding the tasks, and 100
# small projects of 10 tasks) through the core in large batches, starts
# the release server on each (measuring how long each takes to answer),
# then drives all of them at once with tests/examples/scale_probe.rs,
# interleaved call by call (and creation round by round), so the ratios
# hold on a machine whose speed drifts: p50/p99 of get task, the first
# page (50) of the project, filtered by status and by label, the page at
# depth 500,000 (half the project on a smaller board) by cursor and by
# offset, a key lookup, a title search, the last 50 chat messages, and
# durable creation at 64 connections; server RSS after each scenario.
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
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

for n in $SIZES; do
    echo "seeding $n tasks …" >&2
    "$BIN/examples/seed_tasks" "$WORK/board-$n" "$n" 100 > "$WORK/seed-$n.env" 2> "$WORK/seed-$n.err"
    cat "$WORK/seed-$n.err" >&2
    echo "board: $(du -sh "$WORK/board-$n" | cut -f1)" >&2
done

BOARDS=()
: > "$WORK/probe.txt"
for n in $SIZES; do
    # shellcheck disable=SC1090
    source "$WORK/seed-$n.env"
    # Start-up of a board that is not in the operating system's page cache
    # is not measured: dropping the cache needs root and disturbs the
    # machine; the server opens the file without reading it whole.
    started=$(date +%s%N)
    "$BIN/taskboard-server" --listen 127.0.0.1:0 --data-dir "$WORK/board-$n" --log-level warn \
        > "$WORK/server-$n.out" 2> "$WORK/server-$n.err" &
    pid=$!
    PIDS+=("$pid")
    ADDR=""
    for _ in $(seq 1 2000); do
        ADDR="$(grep -o "http://[0-9.:]*" "$WORK/server-$n.out" 2>/dev/null | tail -1 || true)"
        if [ -n "$ADDR" ] && curl -sf -o /dev/null -H "Authorization: Bearer $TOKEN" "$ADDR/api/v1/members/me"; then
            break
        fi
        sleep 0.01
    done
    echo "ready_to_serve $n $(( ($(date +%s%N) - started) / 1000000 )) 0 0" >> "$WORK/probe.txt"
    BOARDS+=("$ADDR,$TOKEN,$PROJECT_ID,$CHAT_ID,$n,$pid")
done
"$BIN/examples/scale_probe" "${BOARDS[@]}" >> "$WORK/probe.txt"

set -- $SIZES
SMALL="$1"; LARGE="${!#}"
echo
printf "%-18s | %22s | %22s | %s\n" "scenario (ms)" "$SMALL: p50 / p99 / RSS MB" "$LARGE: p50 / p99 / RSS MB" "ratio p50 (p99)"
printf -- "-------------------+------------------------+------------------------+----------------\n"
awk -v n="$SMALL" '$2 == n' "$WORK/probe.txt" | while read -r name _ p50 p99 rss; do
    read -r _ _ lp50 lp99 lrss < <(awk -v s="$name" -v n="$LARGE" '$1 == s && $2 == n' "$WORK/probe.txt")
    ratio=$(awk -v a="$p50" -v b="$lp50" -v c="$p99" -v d="$lp99" \
        'BEGIN { if (a > 0) printf "%.2f (%.2f)", b / a, (c > 0 ? d / c : 0); else print "-" }')
    printf "%-18s | %8s %6s %6s | %8s %6s %6s | %s\n" "$name" "$p50" "$p99" "$rss" "$lp50" "$lp99" "$lrss" "$ratio"
done
echo "(ready_to_serve: ms from start to the first answer; create_rate: tasks/s of the median round, its ratio is large/small)"
