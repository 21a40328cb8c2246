#!/usr/bin/env bash
# Benchmark of webhooks (issue 12), in one release process
# (`taskboard-server/examples/webhooks_load.rs`): the board with its
# webhook sender, the writers and the receivers on 127.0.0.1.
#
#   bench/webhooks.sh
#
# Prints: the saturated write rate of 32 writers posting chat messages
# (one event each) without webhooks and with 10 (8 live receivers, one
# refusing connections, one that never answers), and their ratio (the
# share of two cores that sending and receiving 8 deliveries per event
# takes); then, at the offered load of 5,000 events/s, the rate the writes
# were done at without webhooks, with 10 live receivers, with 8 live ones,
# and with the same 8 beside the dead receiver and the black hole (the
# ratio to the first is the cost of webhooks under that load; the last
# two show whether the dead and the black hole change the others' lag),
# with the delivery lag p50/p99 to the live receivers.
#
# Knobs (environment): BENCH_SECONDS (5), RATE (5000), WRITERS (32).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet -p taskboard-server --example webhooks_load
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
TASKBOARD_LOG_LEVEL=warn "$TARGET_DIR/release/examples/webhooks_load" \
    --seconds "${BENCH_SECONDS:-5}" --rate "${RATE:-5000}" --writers "${WRITERS:-32}"
