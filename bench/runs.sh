#!/usr/bin/env bash
# Runs of agents (issue 28), release builds, one command:
#
#   bench/runs.sh
#
# 1. TASKS ready tasks (200), RUNNERS runners (2) of one agent, each
#    running PER_RUNNER (4) runs at a time, so 8 at once, of a trivial
#    command agent (`true`). Prints runs/s from the runners' start to the
#    last run's end, claim-to-agent-start p50/p99 (a run's `created_at`,
#    when its runner claimed the task, to its `started_at`, when the agent
#    process was running), and the server's CPU time (user + system, from
#    /proc) over the phase divided by the runs.
# 2. One agent that writes LINES (20,000) lines as fast as it can, with a
#    client following the event stream (Server-Sent Events): the
#    `run.output` frames/s (at most 10 a run by rule) and transcript
#    entries/s the client received while the agent wrote, and the entries
#    stored.
#
# Knobs (environment): TASKS, RUNNERS, PER_RUNNER, LINES.
set -euo pipefail
cd "$(dirname "$0")/.."
TASKS=${TASKS:-200}
RUNNERS=${RUNNERS:-2}
PER_RUNNER=${PER_RUNNER:-4}
LINES=${LINES:-20000}

cargo build --release --quiet -p taskboard-server -p taskboard-cli
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
server_bin="$TARGET_DIR/release/taskboard-server"
cli_bin="$TARGET_DIR/release/taskboard"

work=$(mktemp -d)
export TASKBOARD_OWNER_PASSWORD="bench-password-$$"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

TASKBOARD_LOG_LEVEL=warn "$server_bin" --listen 127.0.0.1:0 --data-dir "$work/board" >"$work/server.log" 2>&1 &
server=$!
pids+=("$server")
url=""
for _ in $(seq 1 200); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$work/server.log" | head -1 | sed 's/listening on //') || true
    [ -n "$url" ] && break
    kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.05
done
[ -n "$url" ] || { echo "the server did not start" >&2; exit 1; }
echo "server $url (release), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
ticks=$(getconf CLK_TCK)

# The driver: board set-up, then waiting for the runs and reading them.
cat >"$work/drive.py" <<'PY'
import json, sys, time, urllib.request

url = sys.argv[1]
token = None

def call(method, path, body=None, auth=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if auth or token:
        req.add_header("Authorization", "Bearer " + (auth or token))
    with urllib.request.urlopen(req) as res:
        raw = res.read()
        return json.loads(raw) if raw else None

def items(page):
    return page["items"] if isinstance(page, dict) and "items" in page else page

def runs_of(agent):
    out, cursor = [], None
    while True:
        q = f"/api/v1/runs?agent_id={agent}&limit=1000" + (f"&cursor={cursor}" if cursor else "")
        req = urllib.request.Request(url + q)
        req.add_header("Authorization", "Bearer " + token)
        with urllib.request.urlopen(req) as res:
            out += items(json.loads(res.read()))
            link = res.headers.get("Link") or ""
        if 'rel="next"' not in link:
            return out
        cursor = link.split("cursor=")[1].split(">")[0].split("&")[0]

def agent(project, slug):
    a = call("POST", "/api/v1/members", {"name": slug, "slug": slug, "type": "agent"})
    call("POST", f"/api/v1/projects/{project}/members", {"member_id": a["id"]})
    return a

def ts(s):
    from datetime import datetime
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

step = sys.argv[2]
token = call("POST", "/api/v1/auth/login", {"login": "owner", "password": sys.argv[3]})["token"]
if step == "setup":
    tasks = int(sys.argv[4])
    p = call("POST", "/api/v1/projects", {"name": "Bench", "slug": "bench"})
    q = call("POST", "/api/v1/projects", {"name": "Talk", "slug": "talk"})
    worker, talker = agent(p["id"], "worker"), agent(q["id"], "talker")
    for i in range(tasks):
        call("POST", f"/api/v1/tasks?project_id={p['id']}", {"title": f"task {i}", "status": "todo"})
    print(json.dumps({"worker": worker, "talker": talker, "talk": q["id"]}))
elif step == "wait":
    agent_id, n = sys.argv[4], int(sys.argv[5])
    while True:
        runs = runs_of(agent_id)
        done = [r for r in runs if r["state"] not in ("starting", "running", "awaiting_input")]
        if len(done) >= n:
            break
        time.sleep(0.1)
    print(time.time())
    bad = [r["state"] for r in done if r["state"] != "succeeded"]
    if bad:
        print(f"runs that did not succeed: {bad[:5]} ({len(bad)})", file=sys.stderr)
        sys.exit(1)
    waits = sorted(ts(r["started_at"]) - ts(r["created_at"]) for r in done)
    pct = lambda q: waits[min(len(waits) - 1, int(q * len(waits)))] * 1000
    print(f"claim-to-agent-start p50 {pct(0.50):.1f} ms, p99 {pct(0.99):.1f} ms", file=sys.stderr)
    print(f"tasks run twice: {n - len({r['task']['id'] for r in done})}", file=sys.stderr)
elif step == "listen":
    # Follows the event stream until the talker's run ends; counts
    # run.output events and when they came.
    talker, project = sys.argv[4], sys.argv[5]
    req = urllib.request.Request(url + "/api/v1/events")
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Accept", "text/event-stream")
    res = urllib.request.urlopen(req)
    call("POST", f"/api/v1/tasks?project_id={project}", {"title": "talk", "status": "todo"})
    kind, first, last, frames, entries, run_id = None, None, None, 0, 0, None
    for raw in res:
        line = raw.decode().rstrip("\n")
        if line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:") and kind and kind.startswith("run."):
            frame = json.loads(line[5:])
            data = frame.get("data", frame)
            if kind == "run.output":
                now = time.time()
                first = first or now
                last = now
                frames += 1
                entries += len(data.get("entries", []))
            elif kind == "run.updated" and data.get("state") in ("succeeded", "failed"):
                run_id = data.get("id")
                break
    run = call("GET", f"/api/v1/runs/{run_id}") if run_id else {}
    span = (last - first) if first and last and last > first else float("nan")
    print(f"run.output: {frames} frames carrying {entries} entries in {span:.2f} s = "
          f"{frames / span:.1f} frames/s, {entries / span:.0f} entries/s; "
          f"transcript entries stored: {run.get('transcript_count')}; run {run.get('state')}")
PY

setup=$(python3 "$work/drive.py" "$url" setup "$TASKBOARD_OWNER_PASSWORD" "$TASKS")
field() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2], {}, d))' "$setup" "$1"; }
worker_id=$(field 'worker["id"]'); worker_token=$(field 'worker["token"]')
talker_token=$(field 'talker["token"]'); talk=$(field 'talk')

runner_config() { # name slug token command
    cat >"$work/$1.toml" <<EOF
server = "$url"
name = "$1"
state_dir = "$work/$1-state"
max_runs = $PER_RUNNER
keep_workspaces_hours = 0

[[agent]]
slug = "$2"
token = "$3"
command = $4
EOF
}

echo "phase 1: $TASKS tasks, $RUNNERS runners x $PER_RUNNER runs at a time of \`true\`"
before=$(cpu)
start=$(date +%s.%N)
for i in $(seq 1 "$RUNNERS"); do
    runner_config "runner-$i" worker "$worker_token" '["true"]'
    "$cli_bin" agent run --config "$work/runner-$i.toml" >"$work/runner-$i.log" 2>&1 &
    pids+=("$!")
done
end=$(python3 "$work/drive.py" "$url" wait "$TASKBOARD_OWNER_PASSWORD" "$worker_id" "$TASKS")
after=$(cpu)
python3 - "$start" "$end" "$before" "$after" "$ticks" "$TASKS" <<'PY'
import sys
start, end, before, after, ticks, n = map(float, sys.argv[1:])
print(f"runs/s: {n / (end - start):.1f} ({int(n)} runs in {end - start:.2f} s)")
print(f"server CPU per run: {(after - before) / ticks / n * 1000:.2f} ms")
PY
for p in "${pids[@]:1}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
pids=("$server")

echo "phase 2: one agent writing $LINES lines, one client following the events"
runner_config talk talker "$talker_token" "[\"sh\", \"-c\", \"seq 1 $LINES | sed 's/^/output line /'\"]"
"$cli_bin" agent run --config "$work/talk.toml" >"$work/talk.log" 2>&1 &
pids+=("$!")
python3 "$work/drive.py" "$url" listen "$TASKBOARD_OWNER_PASSWORD" talker "$talk"
