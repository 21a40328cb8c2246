#!/usr/bin/env bash
# Durable task creation and single-task reads through the core, on the
# embedded store and on PostgreSQL with one and with three boards on one
# database (each board with its own store, writer and caches, as a server
# process has), in one run, as a table with ratios to the embedded store.
# PostgreSQL is a throwaway cluster (initdb into a temporary directory,
# fsync on) started by the program; see taskboard-core/examples/pg_compare.rs.
#
#   bench/postgres.sh [CREATIONS] [READS] [CONCURRENCY]    # 4000 20000 64
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release --quiet -p taskboard-core --example pg_compare -- "$@"
