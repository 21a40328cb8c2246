#!/usr/bin/env bash
# The board on PostgreSQL against the embedded store, in one run, as
# tables with ratios to the embedded store:
#
# 1. over HTTP (taskboard-server/examples/processes_load.rs): durable task
#    creation and single-task reads at 64 connections on real release
#    server processes — one on the embedded store, one on PostgreSQL, and
#    three on one PostgreSQL database with the requests spread over them;
#    all served at once and driven round by round, median round; and the
#    event lag between the three (one SSE stream on each), median and p99;
# 2. through the core (taskboard-core/examples/pg_compare.rs): the same
#    work without HTTP, with the store's own read path (every task read
#    once) beside the cached one, and title searches one at a time;
#    "3 boards" are three boards on one database in one process, with the
#    lag of events between them; then where the writers' time went
#    (lock wait, reads, writes, commit per batch).
#
# PostgreSQL is a throwaway cluster (initdb into a temporary directory,
# fsync on, Unix socket) started by each program.
#
#   bench/postgres.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p taskboard-server --bin taskboard-server --example processes_load
cargo build --release --quiet -p taskboard-core --example pg_compare
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
"$TARGET_DIR/release/examples/processes_load" --server "$TARGET_DIR/release/taskboard-server"
echo
"$TARGET_DIR/release/examples/pg_compare"
