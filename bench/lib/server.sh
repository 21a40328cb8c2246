# shellcheck shell=bash
# Sourced by the benchmarks: waiting for a server started in the
# background ($SERVER_PID, its standard output and error in LOG.out and
# LOG.err) to listen.

# wait_listening LOG: sets SERVER_URL once the server says where it
# listens; returns 1, showing its errors, when it exits first or does not
# listen within 60 s (the first start of a big board after a crash may
# repair its file for that long).
wait_listening() {
    local log="$1"
    SERVER_URL=""
    for _ in $(seq 1 1200); do
        SERVER_URL="$(grep -o 'listening on http://[0-9.:]*' "$log.out" 2>/dev/null | head -1 | sed 's/listening on //')" || true
        [ -n "$SERVER_URL" ] && return 0
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            wait "$SERVER_PID" 2>/dev/null || true
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
