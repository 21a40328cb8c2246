#!/usr/bin/env bash
# Runs of agents (issue 28), release builds, one command:
#
#   bench/runs.sh              the embedded store, phases 1 and 2
#   bench/runs.sh --database   the fleet on PostgreSQL (issue 47)
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
# With --database, instead: a throwaway PostgreSQL cluster (initdb into a
# temporary directory, fsync on, Unix socket; bench/lib/postgres.sh) and
# PROCESSES (3) release servers on its one database, and AGENTS (100)
# command agents, each with a project of its own holding one ready task,
# served by one `taskboard agent run` runner per process (agent k by the
# runner of process k mod PROCESSES, all its agents at once). Each agent
# writes LINES (2,000) numbered lines as fast as it can. Prints the
# transcript entries/s (the lines stored, from the runners' start to the
# last run's end), the servers' CPU time (user + system from /proc,
# summed over the processes) and PostgreSQL's per entry, and checks every
# run's transcript read back through a process other than its runner's:
# every line stored, once, in the order written. Exits 1 when one is
# lost, repeated or out of order, or a run did not succeed.
#
# Knobs (environment): TASKS, RUNNERS, PER_RUNNER, LINES; with --database
# AGENTS, PROCESSES, LINES.
set -euo pipefail
cd "$(dirname "$0")/.."
DATABASE=0
for arg in "$@"; do
    case "$arg" in
        --database) DATABASE=1 ;;
        *) echo "usage: bench/runs.sh [--database]" >&2; exit 2 ;;
    esac
done
TASKS=${TASKS:-200}
RUNNERS=${RUNNERS:-2}
PER_RUNNER=${PER_RUNNER:-4}
AGENTS=${AGENTS:-100}
PROCESSES=${PROCESSES:-3}
if [ "$DATABASE" = 1 ]; then LINES=${LINES:-2000}; else LINES=${LINES:-20000}; fi

cargo build --release --quiet -p taskboard-server -p taskboard-cli
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
server_bin="$TARGET_DIR/release/taskboard-server"
cli_bin="$TARGET_DIR/release/taskboard"

# The fleet on PostgreSQL (--database).
fleet() {
    pg_start
    local urls=() servers=() i
    for i in $(seq 1 "$PROCESSES"); do
        # One after the other: the first creates the schema.
        db_server_start "$server_bin" "$work/files" "$work/server-$i" || exit 1
        urls+=("$SERVER_URL")
        servers+=("$SERVER_PID")
        pids+=("$SERVER_PID")
    done
    echo "$PROCESSES servers (release) on one PostgreSQL 15 database (fsync on, Unix socket): ${urls[*]}"
    echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    cat >"$work/fleet.py" <<'PY'
import json, sys, time, urllib.request
from datetime import datetime

def call(base, method, path, token=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=60) as res:
        raw = res.read()
        return (json.loads(raw) if raw else None), res.headers

def login(base, password):
    return call(base, "POST", "/api/v1/auth/login", body={"login": "owner", "password": password})[0]["token"]

def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

def runs(base, token):
    out, cursor = [], None
    while True:
        page, headers = call(base, "GET", "/api/v1/runs?limit=1000" + (f"&cursor={cursor}" if cursor else ""), token)
        out += page
        link = headers.get("Link") or ""
        if 'rel="next"' not in link:
            return out
        cursor = link.split("cursor=")[1].split(">")[0].split("&")[0]

step, password, work, lines = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
urls = sys.argv[5].split(",")
agents = int(sys.argv[6])
token = login(urls[0], password)
if step == "setup":
    # Agent k: project fleet-k with one ready task, served by runner k mod n.
    configs = [[] for _ in urls]
    for k in range(agents):
        base = urls[k % len(urls)]
        p, _ = call(base, "POST", "/api/v1/projects", token, {"name": f"Fleet {k}", "slug": f"fleet-{k}"})
        a, _ = call(base, "POST", "/api/v1/members", token, {"name": f"agent-{k}", "slug": f"agent-{k}", "type": "agent"})
        call(base, "POST", f"/api/v1/projects/{p['id']}/members", token, {"member_id": a["id"]})
        call(base, "POST", f"/api/v1/tasks?project_id={p['id']}", token, {"title": f"stream {k}", "status": "todo"})
        script = f"seq 1 {lines} | sed 's/^/agent-{k} line /'"
        configs[k % len(urls)].append(
            f'[[agent]]\nslug = "agent-{k}"\ntoken = {json.dumps(a["token"])}\n'
            f'command = {json.dumps(["sh", "-c", script])}\n')
    for i, (base, entries) in enumerate(zip(urls, configs)):
        with open(f"{work}/fleet-{i}.toml", "w") as f:
            f.write(f'server = "{base}"\nname = "fleet-{i}"\nstate_dir = "{work}/fleet-{i}-state"\n'
                    f"max_runs = {max(1, len(entries))}\nkeep_workspaces_hours = 0\n\n" + "\n".join(entries))
elif step == "wait":
    # Until every agent's run is final; prints the last run's end (the
    # server's clock, this machine's) and the runs' states.
    deadline = time.time() + float(sys.argv[7])
    while True:
        rs = runs(urls[0], token)
        final = [r for r in rs if r["state"] not in ("starting", "running", "awaiting_input")]
        if len(final) >= agents:
            break
        if time.time() > deadline:
            print(f"only {len(final)} of {agents} runs ended in time", file=sys.stderr)
            sys.exit(1)
        time.sleep(0.5)
    states = {}
    for r in final:
        states[r["state"]] = states.get(r["state"], 0) + 1
    print(max(ts(r["ended_at"]) for r in final), ",".join(f"{n}x{s}" for s, n in sorted(states.items())))
elif step == "check":
    # Every run's transcript, read through the process after its runner's.
    rs = runs(urls[0], token)
    tokens = [token] + [login(u, password) for u in urls[1:]]
    stored = lost = repeated = reordered = foreign = other_processes = cut = 0
    bad_runs = []
    for r in rs:
        k = int(r["agent"]["slug"].split("-")[1])
        reader = (k % len(urls) + 1) % len(urls)
        other_processes += reader != k % len(urls)
        got, after = [], 0
        while True:
            page, _ = call(urls[reader], "GET", f"/api/v1/runs/{r['id']}/transcript?after={after}&limit=1000", tokens[reader])
            got += [e["text"] for e in page if e["kind"] == "output" and (e.get("data") or {}).get("stream") == "stdout"]
            if len(page) < 1000:
                break
            after = page[-1]["n"]
        want = [f"agent-{k} line {i}" for i in range(1, lines + 1)]
        index = {w: i for i, w in enumerate(want)}
        stored += len(got)
        mine = [index[g] for g in got if g in index]
        foreign += len(got) - len(mine)
        lost += len(want) - len(set(mine))
        repeated += len(mine) - len(set(mine))
        reordered += sum(1 for a, b in zip(mine, mine[1:]) if b <= a)
        if got != want:
            bad_runs.append(r["agent"]["slug"])
            cut += got == want[:len(got)]
    print(f"runs {len(rs)}; entries stored {stored} of {agents * lines} written; lost {lost}, repeated {repeated}, "
          f"out of order {reordered}, not this agent's {foreign}; read back through another process: "
          f"{other_processes} of {len(rs)} runs")
    print(stored)
    if len(rs) != agents or bad_runs:
        print(f"runs whose transcript is not what the agent wrote: {bad_runs[:10]} ({len(bad_runs)}), "
              f"of which {cut} hold the first lines written and lack the rest", file=sys.stderr)
        sys.exit(1)
PY
    local all
    all=$(IFS=,; echo "${urls[*]}")
    fleet_py() { python3 "$work/fleet.py" "$1" "$TASKBOARD_OWNER_PASSWORD" "$work" "$LINES" "$all" "$AGENTS" "${@:2}"; }
    fleet_py setup
    echo "fleet: $AGENTS command agents writing $LINES lines each, through ${PROCESSES} runners (one per process)"

    local ticks before pg_before start end states after pg_after
    ticks=$(getconf CLK_TCK)
    servers_cpu() { local s=0 p; for p in "${servers[@]}"; do s=$((s + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$s"; }
    before=$(servers_cpu)
    pg_before=$(pg_cpu)
    start=$(date +%s.%N)
    for i in $(seq 0 $((PROCESSES - 1))); do
        "$cli_bin" agent run --config "$work/fleet-$i.toml" >"$work/fleet-$i.log" 2>&1 &
        pids+=("$!")
    done
    read -r end states < <(fleet_py wait 900)
    after=$(servers_cpu)
    pg_after=$(pg_cpu)
    echo "runs ended: $states"
    # The runners stop before the transcripts are read: nothing writes.
    for p in "${pids[@]:$PROCESSES}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    pids=("${servers[@]}")
    local checked stored failed=0
    checked=$(fleet_py check) || failed=1
    echo "$checked" | head -1
    stored=$(echo "$checked" | tail -1)
    [[ "$stored" =~ ^[0-9]+$ ]] || { echo "the check did not finish" >&2; return 1; }
    python3 - "$start" "$end" "$before" "$after" "$pg_before" "$pg_after" "$ticks" "$stored" <<'PY'
import sys
start, end, before, after, pg_before, pg_after, ticks, n = map(float, sys.argv[1:])
n = max(n, 1)
print(f"transcript entries/s: {n / (end - start):.0f} ({int(n)} entries in {end - start:.2f} s, "
      f"runners' start to the last run's end)")
print(f"servers' CPU per entry: {(after - before) / ticks / n * 1e6:.1f} us "
      f"({(after - before) / ticks:.2f} s over the processes); "
      f"PostgreSQL's: {(pg_after - pg_before) / ticks / n * 1e6:.1f} us ({(pg_after - pg_before) / ticks:.2f} s)")
PY
    echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
    case "$states" in *failed*|*cancelled*|*timed_out*|*lost*) failed=1 ;; esac
    if [ "$failed" = 1 ]; then
        echo "FAILED: every run succeeds and every line is stored once, in order" >&2
        return 1
    fi
}

work=$(mktemp -d)
export TASKBOARD_OWNER_PASSWORD="bench-password-$$"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    if [ "$DATABASE" = 1 ]; then pg_stop; fi
    rm -rf "$work"
}
trap cleanup EXIT

if [ "$DATABASE" = 1 ]; then
    # shellcheck source=bench/lib/postgres.sh
    . bench/lib/postgres.sh
    fleet
    exit $?
fi

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
