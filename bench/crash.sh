#!/usr/bin/env bash
# Crash benchmark of taskboard-server (issue 8), in one command:
#
#   bench/crash.sh              the embedded store
#   bench/crash.sh --database   three processes on one PostgreSQL (issue 47)
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
# With --database: a throwaway PostgreSQL cluster (initdb into a temporary
# directory, fsync on, Unix socket; bench/lib/postgres.sh) and three
# release servers on its one database, all running through the rounds.
# In each round the writers are spread over the three (writer w on
# process w mod 3; a writer whose request fails goes on with the next
# process), and one process in turn is killed with SIGKILL 1-3 s into
# 5 s of load, then started again at once. A reader follows the events by
# long-poll (`GET /events?since=`), starting the round on the process to
# be killed from the seq where the round before left it; when its process
# dies it resumes with the same `since` on the next one. Checked per round
# and in total: every acknowledged creation present (by id, through the
# restarted process), task numbers 1..N without gap or repeat (at the
# end), and every seq the reader received the one after the last, never
# a resync. The bar: 0 lost, 0 gaps, 0 seqs skipped or repeated, 0
# resyncs, a resume in every round, every start succeeds.
#
# Environment: CRASH_ROUNDS (default 20; 12 with --database),
# CRASH_WRITERS (default 32), CRASH_SEED (seed of the kill moments;
# default random, printed), CRASH_LOAD_SECONDS (load per round with
# --database, default 5).
set -euo pipefail

cd "$(dirname "$0")/.."
DATABASE=0
for arg in "$@"; do
    case "$arg" in
        --database) DATABASE=1 ;;
        *) echo "usage: bench/crash.sh [--database]" >&2; exit 2 ;;
    esac
done
if [ "$DATABASE" = 1 ]; then ROUNDS="${CRASH_ROUNDS:-12}"; else ROUNDS="${CRASH_ROUNDS:-20}"; fi
LOAD_SECONDS="${CRASH_LOAD_SECONDS:-5}"
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
FOLLOW_PID=""
SERVER_PIDS=()
cleanup() {
    for pid in "$LOAD_PID" "$FOLLOW_PID" "$SERVER_PID" "${SERVER_PIDS[@]}"; do
        if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    done
    if [ "$DATABASE" = 1 ]; then pg_stop; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=bench/lib/server.sh
. bench/lib/server.sh

# Starts the server on a free port and waits until it listens; its URL is
# left in $URL. Returns 1 when it exits instead (the database did not open).
start_server() {
    local log="$WORK/server-$1"
    TASKBOARD_OWNER_PASSWORD="$PASSWORD" "$BIN/taskboard-server" \
        --listen 127.0.0.1:0 --data-dir "$DATA" --log-level warn > "$log.out" 2> "$log.err" &
    SERVER_PID="$!"
    # The first start of a big board after a crash may repair the file: up
    # to 60 s.
    if wait_listening "$log"; then
        URL="$SERVER_URL"
        return 0
    fi
    SERVER_PID=""
    return 1
}

load() {
    TASKBOARD_OWNER_PASSWORD="$PASSWORD" "$BIN/examples/crash_load" --url "$URL" --acks "$ACKS" "$@"
}

# The load client on the processes of one database, the first URL given
# first: load_on FIRST ARGS…
load_on() {
    local first="$1" urls=() i
    shift
    for i in $(seq 0 $((${#URLS[@]} - 1))); do
        urls+=(--url "${URLS[$(((first + i) % ${#URLS[@]}))]}")
    done
    TASKBOARD_OWNER_PASSWORD="$PASSWORD" "$BIN/examples/crash_load" "${urls[@]}" --acks "$ACKS" "$@"
}

# Value of name=… in a line of the load client's figures.
field() {
    echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# From the check of the whole project ($1): TOTAL acknowledged, GAPS,
# DUPLICATES and RENUMBERED task numbers, and LOST raised to what it
# found lost; then the lines both modes print.
totals() {
    local full_lost
    TOTAL="$(wc -l < "$ACKS" | tr -d ' ')"
    GAPS="$(field gaps "$1")"
    DUPLICATES="$(field duplicates "$1")"
    full_lost="$(field lost "$1")"
    RENUMBERED="$(field renumbered "$1")"
    LOST=$((LOST > ${full_lost:-0} ? LOST : ${full_lost:-0}))
}

# Whether the numbers of `totals` and the starts meet the bar.
totals_hold() {
    [ "$LOST" -eq 0 ] && [ "${GAPS:-1}" -eq 0 ] && [ "${DUPLICATES:-1}" -eq 0 ] && [ "${RENUMBERED:-1}" -eq 0 ] \
        && [ "$OPENS" -eq "$STARTS" ]
}

print_totals() {
    echo "lost (acked, absent):   $LOST"
    echo "$1 $OPENS of $STARTS starts"
    echo "gaps in task numbers:   ${GAPS:-?} (numbers present twice: ${DUPLICATES:-?}; acknowledged with another number: ${RENUMBERED:-?})"
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

# Three processes on one PostgreSQL database, one killed per round
# (--database).
crash_database() {
    local processes=3 i round victim delay acked figures follow restarted
    local skipped=0 repeated=0 resyncs=0 resumes=0 received=0 unresumed=0 failed_writes=0
    URLS=()
    export TASKBOARD_OWNER_PASSWORD="$PASSWORD"
    pg_start
    for i in $(seq 0 $((processes - 1))); do
        STARTS=$((STARTS + 1))
        # One after the other: the first creates the schema.
        db_server_start "$BIN/taskboard-server" "$DATA" "$WORK/server-$i-0" || exit 1
        OPENS=$((OPENS + 1))
        URLS+=("$SERVER_URL")
        SERVER_PIDS+=("$SERVER_PID")
    done
    SERVER_PID=""
    echo "crash test on PostgreSQL: $ROUNDS rounds, $processes processes on one database, $WRITERS writers, \
${LOAD_SECONDS} s of load a round, seed $SEED; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for round in $(seq 1 "$ROUNDS"); do
        victim=$(((round - 1) % processes))
        rm -f "$WORK/stop"
        load_on "$victim" follow --since-file "$WORK/since" --stop-file "$WORK/stop" \
            > "$WORK/follow-$round.out" 2> "$WORK/follow-$round.err" &
        FOLLOW_PID="$!"
        load_on "$victim" write --writers "$WRITERS" --failover --max-seconds "$LOAD_SECONDS" \
            > "$WORK/load-$round.out" 2> "$WORK/load-$round.err" &
        LOAD_PID="$!"
        for _ in $(seq 1 600); do
            grep -q "^writing" "$WORK/load-$round.out" 2>/dev/null && break
            kill -0 "$LOAD_PID" 2>/dev/null || break
            sleep 0.05
        done
        delay="$(awk_random "$((SEED + round))")"
        sleep "$delay"
        kill -9 "${SERVER_PIDS[$victim]}"
        wait "${SERVER_PIDS[$victim]}" 2>/dev/null || true
        STARTS=$((STARTS + 1))
        restarted=1
        if db_server_start "$BIN/taskboard-server" "$DATA" "$WORK/server-$victim-$round"; then
            OPENS=$((OPENS + 1))
            URLS[victim]="$SERVER_URL"
            SERVER_PIDS[victim]="$SERVER_PID"
        else
            restarted=0
            SERVER_PIDS[victim]=""
        fi
        if ! wait "$LOAD_PID"; then
            echo "round $round: the load client failed:" >&2
            cat "$WORK/load-$round.err" >&2
            exit 1
        fi
        LOAD_PID=""
        touch "$WORK/stop"
        if ! wait "$FOLLOW_PID"; then
            echo "round $round: the reader failed:" >&2
            cat "$WORK/follow-$round.err" >&2
            exit 1
        fi
        FOLLOW_PID=""
        [ "$restarted" = 1 ] || { echo "round $round: process $victim did not start again" >&2; break; }
        acked="$(sed -n 's/^acknowledged=\([0-9]*\).*/\1/p' "$WORK/load-$round.out")"
        failed_writes=$((failed_writes + $(sed -n 's/^acknowledged=[0-9]* failed=\([0-9]*\).*/\1/p' "$WORK/load-$round.out")))
        # The round's acknowledgements, by id, through the restarted process.
        figures="$(load_on "$victim" check --from $((CHECKED + 1)))"
        CHECKED=$((CHECKED + $(field acknowledged "$figures")))
        LOST=$((LOST + $(field lost "$figures") + $(field renumbered "$figures")))
        follow="$(cat "$WORK/follow-$round.out")"
        received=$((received + $(field received "$follow")))
        skipped=$((skipped + $(field skipped "$follow")))
        repeated=$((repeated + $(field repeated "$follow")))
        resyncs=$((resyncs + $(field resyncs "$follow")))
        resumes=$((resumes + $(field resumes "$follow")))
        if [ "$(field resumes "$follow")" -eq 0 ]; then unresumed=$((unresumed + 1)); fi
        echo "round $round: process $victim killed ${delay} s into the load and started again; $acked creations acknowledged, \
$(sed -n 's/^acknowledged=[0-9]* failed=\([0-9]*\).*/\1/p' "$WORK/load-$round.out") requests failed over; \
by id through it: $figures; reader: $follow"
    done

    local full
    full="$(load_on 0 check)"
    echo "whole project: $full"
    totals "$full"
    echo
    echo "rounds:                 $ROUNDS (kill -9 of one of $processes processes under $WRITERS writers, seed $SEED)"
    echo "acknowledged writes:    $TOTAL ($failed_writes requests failed and went to another process)"
    print_totals "servers started:       "
    echo "reader:                 $received events; $skipped seqs skipped, $repeated repeated, $resyncs resyncs; \
$resumes resumes on another process ($unresumed rounds without one)"
    echo "load average:           $(cut -d' ' -f1-3 /proc/loadavg)"
    if ! totals_hold || [ "$skipped" -ne 0 ] || [ "$repeated" -ne 0 ] || [ "$resyncs" -ne 0 ] \
        || [ "$unresumed" -ne 0 ]; then
        echo "FAILED: the bar is 0 lost, 0 gaps, 0 seqs skipped or repeated, 0 resyncs, a resume every round and every start" >&2
        return 1
    fi
}

if [ "$DATABASE" = 1 ]; then
    # shellcheck source=bench/lib/postgres.sh
    . bench/lib/postgres.sh
    crash_database
    exit $?
fi

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

totals "$FULL"
echo
echo "rounds:                 $ROUNDS (kill -9 under $WRITERS writers, seed $SEED)"
echo "acknowledged writes:    $TOTAL"
print_totals "database opened:       "
if ! totals_hold; then
    echo "FAILED: the bar is 0 lost, 0 gaps and every open" >&2
    exit 1
fi
