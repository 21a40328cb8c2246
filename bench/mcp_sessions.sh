#!/usr/bin/env bash
# Memory of MCP sessions and the bounds on them (docs/rules.md, agents over
# MCP; docs/decisions.md, MCP sessions), in one command:
#
#   bench/mcp_sessions.sh [N, default 10000] [MEMBERS, default 100]
#
# Starts the release server with its defaults (16 sessions per member,
# 1,024 per process, 30 minutes idle), then sends N `initialize` requests
# over a kept-alive connection (opened anew when the server closes it), first all from one agent, then spread
# over MEMBERS agents, and reports the server's resident memory (VmRSS)
# before and after each run, the answers (200 opened, 429 refused), and
# what stays open: the agent of the first run keeps its 16 newest
# sessions, the older ones answer 404. Linux (/proc).
set -euo pipefail

cd "$(dirname "$0")/.."
N="${1:-10000}"
MEMBERS="${2:-100}"

echo "building (release) …" >&2
cargo build --release -q -p taskboard-server --bin taskboard-server
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"

WORK="$(mktemp -d)"
PID=""
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

TASKBOARD_OWNER_PASSWORD=owner-password-1 "$TARGET_DIR/release/taskboard-server" \
    --listen 127.0.0.1:0 --data-dir "$WORK/board" --log-level warn >"$WORK/out" 2>"$WORK/err" &
PID=$!
BASE=""
for _ in $(seq 600); do
    BASE="$(grep -o 'http://[0-9.:]*' "$WORK/out" 2>/dev/null | tail -1 || true)"
    [ -n "$BASE" ] && break
    kill -0 "$PID" 2>/dev/null || { echo "the server stopped:" >&2; cat "$WORK/err" >&2; exit 1; }
    sleep 0.05
done
[ -n "$BASE" ] || { echo "the server did not start" >&2; exit 1; }

python3 - "$BASE" "$PID" "$N" "$MEMBERS" <<'PY'
import http.client, json, sys, time, urllib.parse

base, pid, n, members = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
host = urllib.parse.urlparse(base).netloc
conn = http.client.HTTPConnection(host)

def rss_mb():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

def call(method, path, body=None, token=None, headers=None):
    h = {"content-type": "application/json"}
    if token:
        h["authorization"] = f"Bearer {token}"
    h.update(headers or {})
    global conn
    for attempt in range(2):
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body), headers=h)
            res = conn.getresponse()
            data = res.read()
            return res.status, res.getheader("mcp-session-id"), data
        except (http.client.RemoteDisconnected, ConnectionError):
            # The server closes a connection after an answer given before
            # the request body was read (a refused session); open another.
            conn.close()
            conn = http.client.HTTPConnection(host)
            if attempt:
                raise

status, _, data = call("POST", "/api/v1/auth/login", {"login": "owner", "password": "owner-password-1"})
owner = json.loads(data)["token"]
tokens = []
for i in range(members):
    status, _, data = call("POST", "/api/v1/members", {"name": f"agent {i}", "slug": f"agent-{i}", "type": "agent"}, owner)
    assert status == 201, (status, data)
    tokens.append(json.loads(data)["token"])

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
MCP = {"accept": "application/json, text/event-stream"}

def run(name, token_of):
    before = rss_mb()
    answers, opened = {}, []
    started = time.monotonic()
    for i in range(n):
        token = token_of(i)
        status, session, _ = call("POST", "/mcp", INIT, token, MCP)
        answers[status] = answers.get(status, 0) + 1
        if status == 200:
            opened.append((session, token))
    took = time.monotonic() - started
    after = rss_mb()
    said = ", ".join(f"{answers[s]} x {s}" for s in sorted(answers))
    print(f"{name}: {n} initialize in {took:.1f} s ({n / took:.0f}/s): {said}; "
          f"RSS {before:.1f} MB before, {after:.1f} MB after ({after - before:+.1f} MB)")
    return opened

def alive(session, token):
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    status, _, _ = call("POST", "/mcp", ping, token, dict(MCP, **{"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}))
    return status

print(f"server RSS at start, {members} agents made: {rss_mb():.1f} MB")
one = run("one member", lambda i: tokens[0])
kept = [(s, t) for s, t in one if alive(s, t) == 200]
print(f"  of its {len(one)} sessions opened, {len(kept)} are open (the newest: {kept == one[-len(kept):]}); "
      f"the first answers {alive(*one[0])}")
spread = run(f"{members} members", lambda i: tokens[i % members])
open_now = sum(alive(s, t) == 200 for s, t in kept + spread)
print(f"  sessions open at the end (each pinged): {open_now}; a member holds at most 16, the process 1024")
PY
