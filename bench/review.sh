#!/usr/bin/env bash
# Review and land at size (issue 44), release builds, one command:
#
#   bench/review.sh
#
# 1. Serving a large change: a run records a diff of just under 2 MB over
#    FILES (500) files, another task's run a one-file diff, the baseline.
#    Prints the median time of ROUNDS (30) `GET /tasks/{id}/changes` of
#    each and of `POST /runs/{id}/changes`, and the ratios large/small.
# 2. Showing it: headless Chromium through chromedriver opens each task's
#    Changes tab TIMES (5) times. Prints the median time from the click to
#    the tab's first paint (`data-render-ms`) and to its first files'
#    lines all drawn (`data-settled-ms`, as the page measures them), the
#    longest frame meanwhile, and the ratios large/small.
# 3. Landing a long branch: a runner with a command agent that makes
#    COMMITS (1,000) commits on one task and one commit on another, in a
#    bare repository in a temporary directory; the base moves, and each
#    task is merged (`POST /tasks/{id}/merge`, method merge). Prints the
#    time from the request to the land run's success, median of LANDS (3)
#    pairs, and the ratio long/short.
#
# Needs chromium and chromedriver (tests/setup.sh installs them), git and
# python3. Knobs (environment): FILES, ROUNDS, TIMES, COMMITS, LANDS.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=${FILES:-500}
ROUNDS=${ROUNDS:-30}
TIMES=${TIMES:-5}
COMMITS=${COMMITS:-1000}
LANDS=${LANDS:-3}

cargo build --release --quiet -p taskboard-server -p taskboard-cli
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
server_bin="$TARGET_DIR/release/taskboard-server"
cli_bin="$TARGET_DIR/release/taskboard"
chromedriver=$(command -v chromedriver || true)
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chromedriver" ] && [ -n "$chromium" ] || {
    echo "bench/review.sh needs chromium and chromedriver: bash tests/setup.sh installs them" >&2
    exit 1
}

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
pids+=("$!")
url=""
for _ in $(seq 1 200); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$work/server.log" | head -1 | sed 's/listening on //') || true
    [ -n "$url" ] && break
    sleep 0.05
done
[ -n "$url" ] || { cat "$work/server.log" >&2; echo "the server did not start" >&2; exit 1; }

"$chromedriver" --port=0 >"$work/chromedriver.log" 2>&1 &
pids+=("$!")
driver=""
for _ in $(seq 1 200); do
    port=$(grep -o 'started successfully on port [0-9]*' "$work/chromedriver.log" | grep -o '[0-9]*$') || true
    [ -n "$port" ] && driver="http://127.0.0.1:$port" && break
    sleep 0.05
done
[ -n "$driver" ] || { cat "$work/chromedriver.log" >&2; echo "chromedriver did not start" >&2; exit 1; }
echo "server $url (release), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# The repository of part 3: a bare origin whose main holds a README.
git init -q --initial-branch main "$work/seed"
git -C "$work/seed" -c user.name=bench -c user.email=bench@localhost commit -q --allow-empty -m first
echo hello >"$work/seed/README" && git -C "$work/seed" add README
git -C "$work/seed" -c user.name=bench -c user.email=bench@localhost commit -q -m README
git init -q --bare --initial-branch main "$work/origin.git"
git -C "$work/seed" push -q "$work/origin.git" main

# The agent of part 3: as many commits as its task's title asks for.
cat >"$work/agent.sh" <<'SH'
#!/bin/sh
set -e
n=$(grep -o 'Commit [0-9]*' | head -1 | grep -o '[0-9]*$')
i=0
while [ "$i" -lt "$n" ]; do
    i=$((i + 1))
    echo "$TASKBOARD_TASK line $i" >>"$TASKBOARD_TASK.txt"
    git add "$TASKBOARD_TASK.txt"
    git -c user.name=agent -c user.email=agent@localhost commit -q -m "$TASKBOARD_TASK: step $i"
done
echo "$n commits"
SH
chmod +x "$work/agent.sh"

python3 - "$url" "$driver" "$chromium" "$work" "$cli_bin" "$FILES" "$ROUNDS" "$TIMES" "$COMMITS" "$LANDS" <<'PY'
import json, os, statistics, subprocess, sys, time, urllib.error, urllib.request

url, driver, chromium, work, cli = sys.argv[1:6]
FILES, ROUNDS, TIMES, COMMITS, LANDS = map(int, sys.argv[6:11])
median = statistics.median

def call(method, path, body=None, auth=None, base=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request((base or url + "/api/v1") + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if auth:
        req.add_header("Authorization", "Bearer " + auth)
    try:
        with urllib.request.urlopen(req, timeout=600) as res:
            raw = res.read()
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path}: {e.code} {e.read()[:500]!r}")
    return json.loads(raw) if raw else None

owner = call("POST", "/auth/login", {"login": "owner", "password": os.environ["TASKBOARD_OWNER_PASSWORD"]})["token"]
project = call("POST", "/projects", {"name": "Web", "slug": "web"}, owner)
pid = project["id"]
call("PATCH", f"/projects/{pid}", {"repo_urls": [f"{work}/origin.git"]}, owner)
agent = call("POST", "/members", {"name": "Coder", "slug": "coder", "type": "agent"}, owner)
call("POST", f"/projects/{pid}/members", {"member_id": agent["id"]}, owner)
coder = agent["token"]

def task(title, status="backlog"):
    return call("POST", f"/tasks?project_id={pid}", {"title": title, "status": status}, owner)

def large_diff(n):
    """A diff of `n` files, each `k` lines replaced, `k` as large as keeps
    it under the board's cap of 2,000,000 bytes (1.93 MB for 500 files)."""
    def made(k):
        diff, files = [], []
        for i in range(n):
            path = f"src/module_{i:03}/file_{i:03}.rs"
            diff += [f"diff --git a/{path} b/{path}\n", "index 0000000..1111111 100644\n", f"--- a/{path}\n",
                     f"+++ b/{path}\n", f"@@ -1,{k} +1,{k} @@\n"]
            diff += [f"-    let value_{l:02} = compute_old({l}, \"{path}\"); // old\n" for l in range(k)]
            diff += [f"+    let value_{l:02} = compute_new({l}, \"{path}\"); // new\n" for l in range(k)]
            files.append({"path": path, "status": "modified", "additions": k, "deletions": k})
        return "".join(diff), files
    k = 1
    while len(made(k + 1)[0]) <= 1_990_000:
        k += 1
    return made(k)

def small_diff():
    path = "src/lib.rs"
    diff = (f"diff --git a/{path} b/{path}\nindex 0000000..1111111 100644\n--- a/{path}\n+++ b/{path}\n"
            "@@ -1,3 +1,3 @@\n pub fn a() {}\n-pub fn b() {}\n+pub fn b() -> u8 { 1 }\n pub fn c() {}\n")
    return diff, [{"path": path, "status": "modified", "additions": 1, "deletions": 1}]

def recorded(t, diff, files):
    """A run of the agent on task `t` that records `diff`; answers the
    run's id and the median seconds of ROUNDS // 3 recordings."""
    run = call("POST", f"/tasks/{t['id']}/runs", {"agent_id": agent["id"]}, owner)
    call("PATCH", f"/runs/{run['id']}", {"state": "running"}, coder)
    took = []
    for i in range(max(3, ROUNDS // 3)):
        body = {"task": {"base_commit": "base0", "head_commit": f"head{i}", "branch": f"taskboard/{t['key']}",
                         "files": files, "diff": diff, "truncated": False}}
        began = time.perf_counter()
        call("POST", f"/runs/{run['id']}/changes", body, coder)
        took.append(time.perf_counter() - began)
    call("PATCH", f"/runs/{run['id']}", {"state": "succeeded", "exit_code": 0}, coder)
    return run["id"], median(took)

def served(t):
    took, size = [], 0
    for _ in range(ROUNDS):
        req = urllib.request.Request(f"{url}/api/v1/tasks/{t['id']}/changes")
        req.add_header("Authorization", "Bearer " + owner)
        began = time.perf_counter()
        with urllib.request.urlopen(req) as res:
            size = len(res.read())
        took.append(time.perf_counter() - began)
    return median(took), size

big_diff, big_files = large_diff(FILES)
big, small = task("Large change"), task("Small change")
_, post_big = recorded(big, big_diff, big_files)
_, post_small = recorded(small, *small_diff())
get_big, size_big = served(big)
get_small, size_small = served(small)
ms = lambda s: s * 1000
print(f"1. a diff of {len(big_diff) / 1e6:.2f} MB over {FILES} files against one of one file:")
print(f"   GET /tasks/{{id}}/changes median of {ROUNDS}: {ms(get_big):.1f} ms ({size_big / 1e6:.2f} MB) "
      f"vs {ms(get_small):.2f} ms ({size_small} bytes): {get_big / get_small:.0f}x")
print(f"   POST /runs/{{id}}/changes median of {max(3, ROUNDS // 3)}: {ms(post_big):.1f} ms "
      f"vs {ms(post_small):.2f} ms: {post_big / post_small:.0f}x")

# 2. The Changes tab in headless Chromium, through WebDriver's HTTP API.
caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
    "binary": chromium, "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                 "--no-first-run", "--window-size=1400,900",
                                 f"--user-data-dir={work}/profile"]},
    "timeouts": {"script": 120000}}}}
session = call("POST", "/session", caps, base=driver)["value"]["sessionId"]
wd = lambda method, path, body=None: call(method, f"/session/{session}{path}", body, base=driver)["value"]
def js(script, *args):
    return wd("POST", "/execute/sync", {"script": script, "args": list(args)})
def until(script, *args, limit=120):
    end = time.time() + limit
    while time.time() < end:
        v = js(script, *args)
        if v:
            return v
        time.sleep(0.02)
    sys.exit(f"the page never showed: {script}")

# Signed in as the web board keeps a session (the token in local storage).
wd("POST", "/url", {"url": url + "/"})
until("return document.querySelector('input[name=login]')")
js("""const [login, password] = arguments;
      const f = document.querySelector('input[name=login]').form;
      f.querySelector('input[name=login]').value = login;
      f.querySelector('input[name=password]').value = password;
      f.requestSubmit();""", "owner", os.environ["TASKBOARD_OWNER_PASSWORD"])
until("return document.querySelector('#conn[data-conn=live]')")

SHOWN = """const c = document.querySelector('.panel .changes');
    return c && c.dataset.settled === 'true' && c.dataset.head === arguments[0] && {
      files: c.querySelectorAll('.changed-files li').length,
      rows: c.querySelectorAll('table.diff tr').length,
      render_ms: Number(c.dataset.renderMs), settled_ms: Number(c.dataset.settledMs),
      longest_frame_ms: window.longestFrame(),
    }"""
FRAMES = """let last = performance.now(); let longest = 0;
    const tick = (t) => { longest = Math.max(longest, t - last); last = t; requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    window.longestFrame = () => Math.round(Math.max(longest, performance.now() - last));"""

def shown(t):
    head = call("GET", f"/tasks/{t['id']}/changes", auth=owner)["head_commit"]
    out = []
    for _ in range(TIMES):
        wd("POST", "/url", {"url": f"{url}/#/p/web/t/{t['key']}"})
        wd("POST", "/refresh", {})
        until("return document.querySelector('.panel .tabs button[data-tab=changes]')")
        js(FRAMES)
        began = time.perf_counter()
        js("document.querySelector('.panel .tabs button[data-tab=changes]').click()")
        s = until(SHOWN, head)
        s["wall_ms"] = (time.perf_counter() - began) * 1000
        out.append(s)
    return {k: median(o[k] for o in out) for k in ("render_ms", "settled_ms", "longest_frame_ms", "wall_ms")}, out[0]

page_big, first_big = shown(big)
page_small, first_small = shown(small)
print(f"2. the Changes tab in headless Chromium, median of {TIMES} opens, large vs small "
      f"({first_big['files']} files listed, {first_big['rows']} diff rows drawn at first):")
for k, what in (("render_ms", "click to first paint"), ("settled_ms", "click to first files drawn"),
                ("wall_ms", "click to settled, seen by the driver"), ("longest_frame_ms", "longest frame")):
    print(f"   {what}: {page_big[k]:.0f} ms vs {page_small[k]:.0f} ms: "
          f"{page_big[k] / max(page_small[k], 0.1):.1f}x")
wd("DELETE", "")

# 3. Landing: a runner with a command agent making the task's commits.
state = f"{work}/runner-state"
with open(f"{work}/runner.toml", "w") as f:
    f.write(f'server = "{url}"\nname = "bench"\nstate_dir = "{state}"\nlease_seconds = 60\n'
            f'allow_local_repos = true\nmax_runs = 2\n\n[[agent]]\nslug = "coder"\ntoken = "{coder}"\n'
            f'command = ["{work}/agent.sh"]\ntimeout_seconds = 600\n')
runner = subprocess.Popen([cli, "agent", "run", "--config", f"{work}/runner.toml"],
                          stdout=subprocess.DEVNULL, stderr=open(f"{work}/runner.log", "w"))

def runs_of(t):
    return call("GET", f"/runs?task_id={t['id']}", auth=owner)

def ended(run_id, limit=900):
    end = time.time() + limit
    while time.time() < end:
        r = call("GET", f"/runs/{run_id}", auth=owner)
        if r["state"] not in ("starting", "running", "awaiting_input"):
            return r
        time.sleep(0.02)
    sys.exit(f"run {run_id} did not end")

def worked(title):
    t = task(title, "todo")
    while True:
        rs = [r for r in runs_of(t) if r["purpose"] == "work"]
        if rs:
            r = ended(rs[0]["id"])
            if r["state"] != "succeeded":
                sys.exit(f"{title}: {r['state']} {r.get('stop_reason')}\n" + open(f"{work}/runner.log").read()[-3000:])
            return t, r
        time.sleep(0.05)

def base_moves(i):
    seed = f"{work}/seed"
    subprocess.run(["git", "-C", seed, "pull", "-q", "--no-rebase", f"{work}/origin.git", "main"], check=True)
    with open(f"{seed}/base-{i}.txt", "w") as f:
        f.write(f"{i}\n")
    subprocess.run(["git", "-C", seed, "add", "."], check=True)
    subprocess.run(["git", "-C", seed, "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                    "commit", "-q", "-m", f"base {i}"], check=True)
    subprocess.run(["git", "-C", seed, "push", "-q", f"{work}/origin.git", "main"], check=True)

def landed(t):
    began = time.perf_counter()
    land = call("POST", f"/tasks/{t['id']}/merge", {"method": "merge"}, owner)
    r = ended(land["id"])
    took = time.perf_counter() - began
    if r["state"] != "succeeded":
        sys.exit(f"landing {t['key']}: {r['state']} {r.get('stop_reason')}")
    return took

try:
    long_took, short_took, made = [], [], 0
    for i in range(LANDS):
        began = time.perf_counter()
        long_task, long_run = worked(f"Commit {COMMITS} times")
        made = time.perf_counter() - began
        short_task, _ = worked("Commit 1 time")
        base_moves(i)
        long_took.append(landed(long_task))
        short_took.append(landed(short_task))
    commits = subprocess.run(["git", "-C", f"{work}/origin.git", "rev-list", "--count", "main"],
                             capture_output=True, text=True, check=True).stdout.strip()
    print(f"3. landing a branch of {COMMITS} commits against one of 1 commit (method merge, the base moved), "
          f"median of {LANDS}:")
    print(f"   merge request to the land run's success: {median(long_took) * 1000:.0f} ms vs "
          f"{median(short_took) * 1000:.0f} ms: {median(long_took) / median(short_took):.2f}x "
          f"(main has {commits} commits; the last {COMMITS}-commit work run took {made:.1f} s with its push)")
finally:
    runner.terminate()
    runner.wait()
PY
