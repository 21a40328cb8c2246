#!/usr/bin/env bash
# WebSocket benchmark (issue 4): a release server in its own process and
# the load client `taskboard-server/examples/ws_load.rs`.
#
#   bench/ws.sh                 both scenarios
#   bench/ws.sh fanout          1,000 clients, one task update at a time, then
#                               the floor (`ws_floor`: one write and one read of
#                               the same frame per loopback connection) and the ratio
#   CLIENTS=10000 bench/ws.sh fanout   the same to 10,000 clients
#   bench/ws.sh sustained       10,000 events/s to 100 clients for 10 s
#
# Knobs (environment): CLIENTS, ROUNDS (fanout); RATE, DURATION (seconds), EVENT
# (status|task), SUSTAINED_CLIENTS (sustained).
set -euo pipefail
cd "$(dirname "$0")/.."

# One socket per client on each side (the server and the load client are
# processes of their own), plus the HTTP pool and the files of the store:
# the open-file limit is raised to the hard limit, and must hold that.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
need=$(( ${CLIENTS:-1000} > ${SUSTAINED_CLIENTS:-100} ? ${CLIENTS:-1000} : ${SUSTAINED_CLIENTS:-100} ))
need=$(( need + 1024 ))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
    echo "the open-file limit is $(ulimit -n) (hard limit $(ulimit -Hn)); the benchmark needs $need" >&2
    exit 1
fi

cargo build --release --quiet -p taskboard-server --bin taskboard-server --example ws_load --example ws_floor
bin=target/release/taskboard-server
load=target/release/examples/ws_load
floor=target/release/examples/ws_floor

data=$(mktemp -d)
log="$data/server.log"
export TASKBOARD_OWNER_PASSWORD="bench-password-$$"
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$data"
}
trap cleanup EXIT

# Every client is the same member: its limit of open event streams (64 by
# default, a 65th is 429) is raised to the clients and the probe.
TASKBOARD_LOG_LEVEL=warn "$bin" --listen 127.0.0.1:0 --data-dir "$data/board" \
    --streams-per-member "$need" >"$log" 2>&1 &
server=$!
url=""
for _ in $(seq 1 200); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$log" | head -1 | sed 's/listening on //') || true
    [ -n "$url" ] && break
    kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.05
done
[ -n "$url" ] || { echo "the server did not start" >&2; cat "$log" >&2; exit 1; }
echo "server $url (release), $(nproc) cores"

# CPU seconds the server has used so far (user + system).
server_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$server/stat"; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

what=${1:-all}
if [ "$what" = all ] || [ "$what" = fanout ]; then
    before=$(server_cpu)
    "$load" --url "$url" fanout --clients "${CLIENTS:-1000}" --rounds "${ROUNDS:-30}" | tee "$data/fanout.out"
    echo "server CPU: $before s -> $(server_cpu) s"
    # The floor: the same number of loopback connections, one write and
    # one read of a frame of the same size each, and nothing else.
    bytes=$(sed -n 's/.*task.updated frames of \([0-9]*\) bytes.*/\1/p' "$data/fanout.out")
    "$floor" --clients "${CLIENTS:-1000}" --rounds "${ROUNDS:-30}" --bytes "${bytes:-700}" | tee "$data/floor.out"
    last=$(grep 'to its last client' "$data/fanout.out")
    awk -v fan="$last" -v floor="$(cat "$data/floor.out")" 'BEGIN {
        match(fan, /p50 [0-9.]+/); f50 = substr(fan, RSTART + 4, RLENGTH - 4)
        match(fan, /p99 [0-9.]+/); f99 = substr(fan, RSTART + 4, RLENGTH - 4)
        match(floor, /p50 [0-9.]+/); b50 = substr(floor, RSTART + 4, RLENGTH - 4)
        match(floor, /p99 [0-9.]+/); b99 = substr(floor, RSTART + 4, RLENGTH - 4)
        if (b50 > 0 && b99 > 0) printf "fanout / floor, to the last client: p50 %.2f, p99 %.2f\n", f50 / b50, f99 / b99
    }'
fi
if [ "$what" = all ] || [ "$what" = sustained ]; then
    before=$(server_cpu)
    "$load" --url "$url" sustained --clients "${SUSTAINED_CLIENTS:-100}" --rate "${RATE:-10000}" \
        --seconds "${DURATION:-10}" --event "${EVENT:-status}"
    echo "server CPU: $before s -> $(server_cpu) s"
fi
