#!/usr/bin/env bash
# Load benchmark of taskboard-server (issues 3 and 25), in one command:
#
#   bench/run.sh                    # this checkout alone
#   bench/run.sh --against 5e5f4fa  # this checkout beside a git revision
#
# Builds the release server, a bare hyper hello-world (the baseline) and a
# seeding program; prepares a board of 10,000 tasks (one project holding
# 1,000, of which 200 are `todo`); starts the servers on loopback and
# drives each scenario with wrk (64 connections). Prints req/s and p99 per
# scenario, each scenario's ratio to the baseline and, with `--against`,
# to the reference; then the server's CPU time and the bytes it had
# written to storage per request (`/proc/PID/stat` and `/proc/PID/io`
# over each run), which the machine's drift moves less than req/s.
#
# With `--against REV`, REV is exported (`git archive`) into a tree of its
# own, target/bench-ref/<commit>/src, and built there with a target
# directory of its own (a shared one would mix up the two builds: their
# crates have the same names, versions and relative paths, and cargo
# judges a path crate fresh by the times of its files); its server and
# seeder are copied to target/bench-ref/<commit>/bin, kept between runs
# (delete that directory to rebuild). Each server gets a board
# written by its own seeder: a board written by today's seeder may be in a
# format an older server does not open, and the seeders make the same board
# (the seeder of 5e5f4fa is the one of today). A revision without
# `examples/seed.rs` cannot be measured. Both servers are driven
# alternately: each round runs every scenario on one then the other (the
# order swapped each round), and the bare baseline once per round, so a
# machine whose speed drifts slows both alike; the figures are the medians
# of the rounds.
#
# Environment: BENCH_DURATION (seconds per scenario, default 10),
# BENCH_CONNECTIONS (default 64), BENCH_THREADS (wrk threads, default 2),
# BENCH_ROUNDS (default 3), BENCH_ONLY (an extended regular expression:
# only the scenarios whose label matches it). The servers' data
# directories are made under TMPDIR: `TMPDIR=/dev/shm` puts them on
# tmpfs, where a sync costs nothing, to compare the builds' processor
# time without the disk's (docs/storage.md, S.43).
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION="${BENCH_DURATION:-10}"
CONNECTIONS="${BENCH_CONNECTIONS:-64}"
THREADS="${BENCH_THREADS:-2}"
ROUNDS="${BENCH_ROUNDS:-3}"
ONLY="${BENCH_ONLY:-}"

AGAINST=""
while [ $# -gt 0 ]; do
    case "$1" in
        --against) AGAINST="${2:?--against needs a git revision}"; shift 2 ;;
        --against=*) AGAINST="${1#--against=}"; shift ;;
        *) echo "usage: bench/run.sh [--against REV]" >&2; exit 2 ;;
    esac
done

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

TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
BIN="$TARGET_DIR/release"

if [ -n "$AGAINST" ]; then
    COMMIT="$(git rev-parse --verify --short=7 "$AGAINST^{commit}")"
    REF="$TARGET_DIR/bench-ref/$COMMIT"
    if [ ! -x "$REF/bin/taskboard-server" ] || [ ! -x "$REF/bin/seed" ]; then
        git cat-file -e "$COMMIT:taskboard-server/examples/seed.rs" 2>/dev/null || {
            echo "$AGAINST has no taskboard-server/examples/seed.rs: its board cannot be seeded" >&2
            exit 1
        }
        if [ ! -f "$REF/src/Cargo.toml" ]; then
            mkdir -p "$REF/src"
            git archive "$COMMIT" | tar -x -C "$REF/src"
        fi
        echo "building $COMMIT (release) in $REF/src …" >&2
        (cd "$REF/src" && CARGO_TARGET_DIR="$REF/target" cargo build --release -q \
            -p taskboard-server --bin taskboard-server --example seed)
        mkdir -p "$REF/bin"
        cp "$REF/target/release/taskboard-server" "$REF/target/release/examples/seed" "$REF/bin/"
    fi
fi

echo "building (release) …" >&2
cargo build --release -q -p taskboard-server --bin taskboard-server --example bare --example seed

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# Starts a program that prints "listening on http://IP:PORT" and waits
# until it is accepting; its address is left in $WORK/<name>.addr. Not run
# in a subshell, so PIDS keeps the process for the cleanup.
start() {
    local name="$1"; shift
    "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
    PIDS+=("$!")
    echo "$!" > "$WORK/$name.pid"
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

# Seeds a board with `seeder` and starts `server` on it; the ids the load
# needs are left in $WORK/<name>.env.
serve() {
    local name="$1" server="$2" seeder="$3"
    echo "seeding 10,000 tasks for $name …" >&2
    "$seeder" "$WORK/$name-data" > "$WORK/$name.env"
    start "$name" "$server" --listen 127.0.0.1:0 --data-dir "$WORK/$name-data" --log-level warn
}

SIDES=(main)
serve main "$BIN/taskboard-server" "$BIN/examples/seed"
if [ -n "$AGAINST" ]; then
    SIDES+=(ref)
    serve ref "$REF/bin/taskboard-server" "$REF/bin/seed"
fi
start bare "$BIN/examples/bare" 127.0.0.1:0
BARE="$(cat "$WORK/bare.addr")"

cat > "$WORK/post_task.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title": "created under load", "priority": "high"}'
EOF
for side in "${SIDES[@]}"; do
    # shellcheck disable=SC1090
    (source "$WORK/$side.env"; cat > "$WORK/post_message-$side.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"chat_id": "$CHAT_ID", "content": "hello from the benchmark"}'
EOF
    )
done

# Runs wrk; prints "req/s p99_ms non2xx requests".
load() {
    local url="$1"; shift
    local out
    out="$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" "$url")"
    local rps p99 bad n
    rps="$(echo "$out" | awk '/Requests\/sec/ {print $2}')"
    p99="$(echo "$out" | awk '$1 == "99%" {print $2}')"
    bad="$(echo "$out" | awk '/Non-2xx/ {print $NF}')"
    n="$(echo "$out" | awk '/requests in/ {print $1}')"
    echo "$rps $(to_ms "${p99:-0}") ${bad:-0} ${n:-0}"
}

# A process's CPU time (clock ticks, user and system) and the bytes it
# has had written to storage: "ticks bytes".
usage() {
    echo "$(awk '{print $14 + $15}' "/proc/$1/stat") $(awk '/^write_bytes/ {print $2}' "/proc/$1/io")"
}
HZ="$(getconf CLK_TCK)"

# p99 as wrk prints it (e.g. 1.23ms, 850.00us, 1.02s) → milliseconds.
to_ms() {
    awk -v v="$1" 'BEGIN {
        if (v ~ /us$/) { sub(/us$/, "", v); printf "%.2f", v / 1000 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.2f", v }
        else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.2f", v * 1000 }
        else { print v }
    }'
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The scenarios: label, then the wrk arguments after the server's address,
# with $TOKEN and the ids of the side's seed (read by `eval`: quote what
# holds a `&`).
SCENARIOS=(
    "GET /health|/health"
    "GET /tasks/{id} (agent token)|/api/v1/tasks/\$TASK_ID -H \"Authorization: Bearer \$TOKEN\""
    "GET /tasks?project_id&status=todo (200)|\"/api/v1/tasks?project_id=\$PROJECT_ID&status=todo\" -H \"Authorization: Bearer \$TOKEN\""
    "POST /tasks (durable)|\"/api/v1/tasks?project_id=\$LOAD_PROJECT_ID\" -H \"Authorization: Bearer \$TOKEN\" -s \$WORK/post_task.lua"
    "POST /messages (durable)|/api/v1/messages -H \"Authorization: Bearer \$TOKEN\" -s \$WORK/post_message-\$SIDE.lua"
)

# One wrk run of scenario $2 on side $1; appends "req/s p99 non2xx
# requests cpu_us_per_request bytes_written_per_request" (the server's
# CPU time and the bytes it had written to storage, over the run) to
# $WORK/results/<scenario index>.<side>.
measure() {
    local side="$1" index="$2"
    local args="${SCENARIOS[$index]#*|}"
    local pid line before after
    pid="$(cat "$WORK/$side.pid")"
    before="$(usage "$pid")"
    line="$(
        # shellcheck disable=SC1090
        source "$WORK/$side.env"
        SIDE="$side"
        export SIDE WORK
        eval "set -- $args"
        url="$(cat "$WORK/$side.addr")$1"
        shift
        load "$url" "$@"
    )"
    after="$(usage "$pid")"
    line="$line $(echo "$before $after $line" | awk -v hz="$HZ" '{
        n = $8; if (n > 0) printf "%.1f %.0f", ($3 - $1) / hz * 1e6 / n, ($4 - $2) / n; else print "0 0" }')"
    echo "$line" >> "$WORK/results/$index.$side"
    echo "  round $round  $side  ${SCENARIOS[$index]%%|*}: $line" >&2
}

mkdir -p "$WORK/results"
SELECTED=()
for i in "${!SCENARIOS[@]}"; do
    if [ -z "$ONLY" ] || echo "${SCENARIOS[$i]%%|*}" | grep -Eq -- "$ONLY"; then SELECTED+=("$i"); fi
done

echo "driving each scenario for ${DURATION}s with $CONNECTIONS connections, $ROUNDS rounds …" >&2
for round in $(seq 1 "$ROUNDS"); do
    line="$(load "$BARE/")"
    echo "$line" >> "$WORK/results/bare"
    echo "  round $round  bare: $line" >&2
    order=("${SIDES[@]}")
    if [ $((round % 2)) -eq 0 ] && [ "${#SIDES[@]}" -eq 2 ]; then order=(ref main); fi
    for i in "${SELECTED[@]}"; do
        for side in "${order[@]}"; do measure "$side" "$i"; done
    done
done

# Median of column $2 of results file $1.
med() { awk -v c="$2" '{ print $c }' "$1" | median; }
bad() { awk '{ s += $3 } END { print s + 0 }' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

BARE_RPS="$(med "$WORK/results/bare" 1)"
echo
echo "medians of $ROUNDS rounds; ${DURATION}s per scenario, $CONNECTIONS connections; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$AGAINST" ]; then
    printf "%-40s %9s %8s %9s %8s %9s %8s %8s\n" "scenario" "req/s" "p99 ms" "$COMMIT" "p99 ms" "/$COMMIT" "vs bare" "ref/bare"
else
    printf "%-40s %9s %8s %8s\n" "scenario" "req/s" "p99 ms" "vs bare"
fi
printf "%-40s %9.0f %8s\n" "bare hyper hello-world (baseline)" "$BARE_RPS" "$(med "$WORK/results/bare" 2)"
for i in "${SELECTED[@]}"; do
    label="${SCENARIOS[$i]%%|*}"
    m="$WORK/results/$i.main"
    rps="$(med "$m" 1)"
    if [ -n "$AGAINST" ]; then
        r="$WORK/results/$i.ref"
        ref_rps="$(med "$r" 1)"
        printf "%-40s %9.0f %8s %9.0f %8s %9s %8s %8s" "$label" "$rps" "$(med "$m" 2)" "$ref_rps" "$(med "$r" 2)" \
            "$(ratio "$rps" "$ref_rps")" "$(ratio "$rps" "$BARE_RPS")" "$(ratio "$ref_rps" "$BARE_RPS")"
        [ "$(bad "$r")" != 0 ] && printf "   (%s non-2xx answers from %s!)" "$(bad "$r")" "$COMMIT"
    else
        printf "%-40s %9.0f %8s %8s" "$label" "$rps" "$(med "$m" 2)" "$(ratio "$rps" "$BARE_RPS")"
    fi
    [ "$(bad "$m")" != 0 ] && printf "   (%s non-2xx answers!)" "$(bad "$m")"
    printf "\n"
done
echo
echo "the server's CPU time (user and system) and bytes written to storage, per request (medians)"
if [ -n "$AGAINST" ]; then
    printf "%-40s %9s %9s %9s %9s %9s\n" "scenario" "cpu µs" "bytes" "$COMMIT" "bytes" "cpu /$COMMIT"
else
    printf "%-40s %9s %9s\n" "scenario" "cpu µs" "bytes"
fi
for i in "${SELECTED[@]}"; do
    label="${SCENARIOS[$i]%%|*}"
    m="$WORK/results/$i.main"
    if [ -n "$AGAINST" ]; then
        r="$WORK/results/$i.ref"
        printf "%-40s %9s %9s %9s %9s %9s\n" "$label" "$(med "$m" 5)" "$(med "$m" 6)" "$(med "$r" 5)" "$(med "$r" 6)" \
            "$(ratio "$(med "$m" 5)" "$(med "$r" 5)")"
    else
        printf "%-40s %9s %9s\n" "$label" "$(med "$m" 5)" "$(med "$m" 6)"
    fi
done
echo
echo "targets: GET /tasks/{id} >= 0.80 of the baseline; against 5e5f4fa: the 200-task list >= 1.5, POST /tasks >= 1.25 with a p99 no longer"
