#!/usr/bin/env bash
# Crash benchmark of taskboard-server (issue 8), in one command:
#
#   bench/crash.sh
#
# Builds the release server and the load client (examples/crash_load.rs).
# Then, for each round, on one data directory kept across the rounds:
# starts the server, checks that every task acknowledged in the round
# before is there (GET by id), runs 32 concurrent writers creating tasks
# (durable writes; each 201 is recorded in a file the moment it arrives)
# and kills the server with SIGKILL at a random moment 1-3 s into the
# load. A last start checks the last round, then reads the whole project
# once: every acknowledged task of every round, and the task numbers,
# which come from the project's counter and so must be 1..N without a
# gap or a repeat. Prints per round and in total: acknowledged creations,
# lost ones (acknowledged but absent), gaps, and how often the database
# opened. The bar: 0 lost, 0 gaps, every open succeeds.
#
# SIGKILL ends the process, not the machine: what the server wrote is in
# the kernel's page cache and survives, so this proves that an
# acknowledged creation was committed and that the database recovers from
# a process killed at any point, not that the sync reaches the disk before
# a power cut.
#
# Environment: CRASH_ROUNDS (default 20), CRASH_WRITERS (default 32),
# CRASH_SEED (seed of the kill moments; default random, printed).
set -euo pipefail

cd "$(dirname "$0")/.."
ROUNDS="${CRASH_ROUNDS:-20}"
WRITERS="${CRASH_WRITERS:-32}"
SEED="${CRASH_SEED:-$RANDOM}"
PASSWORD="crash-bench-password"

echo "building (release) …" >&2
cargo build --release -q -p taskboard-server --bin taskboard-server --example crash_load
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
BIN="$TARGET_DIR/release"

WORK="$(mktemp -d)"
DATA="$WORK/data"
ACKS="$WORK/acks"
SERVER_PID=""
LOAD_PID=""
cleanup() {
    for pid in "$LOAD_PID" "$SERVER_PID"; do
        if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

# Starts the server on a free port and waits until it listens; its URL is
# left in $URL. Returns 1 when it exits instead (the database did not open).
start_server() {
    local log="$WORK/server-$1"
    TASKBOARD_OWNER_PASSWORD="$PASSWORD" "$BIN/taskboard-server" \
        --listen 127.0.0.1:0 --data-dir "$DATA" --log-level warn > "$log.out" 2> "$log.err" &
    SERVER_PID="$!"
    # The first start of a big board after a crash may repair the file: up
    # to 60 s.
    for _ in $(seq 1 1200); do
        if grep -q "listening on http://" "$log.out" 2>/dev/null; then
            URL="$(grep -o "http://[0-9.:]*" "$log.out" | tail -1)"
            return 0
        fi
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            wait "$SERVER_PID" 2>/dev/null || true
            SERVER_PID=""
            echo "the server did not start:" >&2
            cat "$log.err" >&2
            return 1
        fi
        sleep 0.05
    done
    echo "the server did not listen within 60 s:" >&2
    cat "$log.err" >&2
    return 1
}

load() {
    TASKBOARD_OWNER_PASSWORD="$PASSWORD" "$BIN/examples/crash_load" --url "$URL" --acks "$ACKS" "$@"
}

# Value of name=… in a line of the load client's figures.
field() {
    echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

OPENS=0
STARTS=0
LOST=0
CHECKED=0
# Checks the acknowledgements of the last round, by id, against the
# running server; adds its lost ones to LOST. Not to be run in a subshell:
# it sets the totals.
check_round() {
    local figures
    figures="$(load check --from $((CHECKED + 1)))"
    CHECKED=$((CHECKED + $(field acknowledged "$figures")))
    LOST=$((LOST + $(field lost "$figures") + $(field renumbered "$figures")))
    echo "  after the restart: $figures"
}

awk_random() {
    awk -v seed="$1" 'BEGIN { srand(seed); printf "%.2f", 1 + 2 * rand() }'
}

echo "crash test: $ROUNDS rounds, $WRITERS writers, seed $SEED, data in $DATA" >&2
for round in $(seq 1 "$ROUNDS"); do
    STARTS=$((STARTS + 1))
    if ! start_server "$round"; then
        echo "round $round: the database did not open" >&2
        break
    fi
    OPENS=$((OPENS + 1))
    if [ "$round" -gt 1 ]; then
        check_round
    fi
    delay="$(awk_random "$((SEED + round))")"
    load write --writers "$WRITERS" > "$WORK/load-$round.out" 2> "$WORK/load-$round.err" &
    LOAD_PID="$!"
    for _ in $(seq 1 600); do
        grep -q "^writing" "$WORK/load-$round.out" 2>/dev/null && break
        kill -0 "$LOAD_PID" 2>/dev/null || break
        sleep 0.05
    done
    sleep "$delay"
    kill -9 "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    if ! wait "$LOAD_PID"; then
        echo "round $round: the load client failed:" >&2
        cat "$WORK/load-$round.err" >&2
        exit 1
    fi
    LOAD_PID=""
    acked="$(sed -n 's/^acknowledged=\([0-9]*\).*/\1/p' "$WORK/load-$round.out")"
    echo "round $round: killed ${delay} s into the load; $acked creations acknowledged"
done

# A last start checks the last round, then everything at once.
STARTS=$((STARTS + 1))
FULL=""
if start_server final; then
    OPENS=$((OPENS + 1))
    check_round
    FULL="$(load check)"
    echo "whole project: $FULL"
    kill "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
fi

TOTAL="$(wc -l < "$ACKS" | tr -d ' ')"
GAPS="$(field gaps "$FULL")"
DUPLICATES="$(field duplicates "$FULL")"
FULL_LOST="$(field lost "$FULL")"
RENUMBERED="$(field renumbered "$FULL")"
LOST=$((LOST > ${FULL_LOST:-0} ? LOST : ${FULL_LOST:-0}))
echo
echo "rounds:                 $ROUNDS (kill -9 under $WRITERS writers, seed $SEED)"
echo "acknowledged writes:    $TOTAL"
echo "lost (acked, absent):   $LOST"
echo "database opened:        $OPENS of $STARTS starts"
echo "gaps in task numbers:   ${GAPS:-?} (numbers present twice: ${DUPLICATES:-?}; acknowledged with another number: ${RENUMBERED:-?})"
if [ "$LOST" -ne 0 ] || [ "${GAPS:-1}" -ne 0 ] || [ "${DUPLICATES:-1}" -ne 0 ] || [ "${RENUMBERED:-1}" -ne 0 ] \
    || [ "$OPENS" -ne "$STARTS" ]; then
    echo "FAILED: the bar is 0 lost, 0 gaps and every open" >&2
    exit 1
fi
