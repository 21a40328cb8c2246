# shellcheck shell=bash
# Sourced by the benchmarks that run on PostgreSQL (`--database`): a
# throwaway PostgreSQL cluster and release servers on it.
#
# The cluster is initdb'd into a temporary directory of its own, fsync
# on, listening on a Unix socket in that directory only (as
# tests/pg-scratch starts one). initdb refuses root, so under root it runs
# as the `postgres` system user (and the directory is not inside the
# caller's, which that user may not enter). Binaries: TASKBOARD_PG_BIN,
# else /usr/lib/postgresql/15/bin.
#
# Sets PG_URL (the board in the schema `bench`) after pg_start; the caller
# calls pg_stop from its exit trap, which also removes the directory.

# shellcheck source=bench/lib/server.sh
. bench/lib/server.sh

PG_BIN="${TASKBOARD_PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_DIR=""
PG_AS=()

# pg_start: a new cluster, running when it returns.
pg_start() {
    PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/taskboard-pg-XXXXXX")"
    if [ "$(id -u)" = 0 ]; then
        chown postgres: "$PG_DIR"
        PG_AS=(runuser -u postgres --)
    fi
    if ! "${PG_AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 --no-sync \
        >"$PG_DIR/initdb.log" 2>&1; then
        cat "$PG_DIR/initdb.log" >&2
        return 1
    fi
    if ! "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
        -o "-k $PG_DIR -c listen_addresses='' -c fsync=on -c full_page_writes=on -c max_connections=300" \
        start >/dev/null; then
        cat "$PG_DIR/server.log" >&2
        return 1
    fi
    PG_URL="postgres://postgres@localhost/postgres?host=$PG_DIR&schema=bench"
}

pg_stop() {
    if [ -n "$PG_DIR" ] && [ -d "$PG_DIR/data" ]; then
        "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    if [ -n "$PG_DIR" ]; then rm -rf "$PG_DIR"; fi
}

# CPU time of the cluster in clock ticks: the postmaster's own and that of
# its children, ended (reaped) and running.
pg_cpu() {
    local postmaster
    postmaster="$(head -1 "$PG_DIR/data/postmaster.pid" 2>/dev/null)" || { echo 0; return; }
    {
        awk '{ print $14 + $15 + $16 + $17 }' "/proc/$postmaster/stat" 2>/dev/null || true
        for child in $(ps -o pid= --ppid "$postmaster"); do
            awk '{ print $14 + $15 }' "/proc/$child/stat" 2>/dev/null || true
        done
    } | awk '{ s += $1 } END { print s + 0 }'
}

# db_server_start BIN DATA_DIR LOG: a release server on the database at
# PG_URL, listening on a free port, with its files in DATA_DIR (shared by
# all the processes of one board). Sets SERVER_PID and SERVER_URL; returns
# 1 when it exits before listening.
db_server_start() {
    local bin="$1" data="$2" log="$3"
    TASKBOARD_LOG_LEVEL=warn "$bin" --listen 127.0.0.1:0 --data-dir "$data" --database "$PG_URL" \
        >"$log.out" 2>"$log.err" &
    SERVER_PID="$!"
    wait_listening "$log"
}
