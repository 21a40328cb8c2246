#!/usr/bin/env bash
# A large import (issue 26, Moving in): generates N beads issues (default
# 100,000; one in ten with a parent, one in five with a dependency on an
# earlier issue, one in four with a comment), imports them into a new
# local board with the release build, and prints the wall time and the
# peak resident memory of the `taskboard import` process (GNU time's
# "Maximum resident set size"). Then imports the same file again (every
# record unchanged) and prints the same figures.
#
#   bench/import.sh [N, default 100000]
#
# TASKBOARD_BIN=path/to/taskboard measures that binary instead of
# building the release one.
set -euo pipefail

cd "$(dirname "$0")/.."
N="${1:-100000}"
TB="${TASKBOARD_BIN:-}"
if [ -z "$TB" ]; then
    cargo build --release -q -p taskboard-cli --bin taskboard
    TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
    TB="$TARGET_DIR/release/taskboard"
fi
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time): apt-get install time" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 - "$N" > "$WORK/issues.jsonl" <<'PY'
import json, sys
n = int(sys.argv[1])
statuses = ["open", "in_progress", "blocked", "deferred", "closed"]
types = ["task", "bug", "feature", "epic", "chore"]
for i in range(1, n + 1):
    issue = {
        "id": f"bd-{i}",
        "title": f"Issue number {i} of the generated backlog",
        "description": "Generated for the import benchmark. " * 4,
        "status": statuses[i % 5],
        "priority": i % 5,
        "issue_type": types[i % 5],
        "assignee": f"agent-{i % 20}",
        "labels": [f"area-{i % 30}"],
        "created_at": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00Z",
        "updated_at": "2025-12-01T10:00:00Z",
    }
    if issue["status"] == "closed":
        issue["closed_at"] = "2025-12-01T10:00:00Z"
    deps = []
    if i > 10 and i % 10 == 0:
        deps.append({"issue_id": f"bd-{i}", "depends_on_id": f"bd-{i - 7}", "type": "parent-child"})
    if i > 3 and i % 5 == 1:
        deps.append({"issue_id": f"bd-{i}", "depends_on_id": f"bd-{i - 3}", "type": "blocks"})
    if deps:
        issue["dependencies"] = deps
    if i % 4 == 0:
        issue["comments"] = [{"id": f"c{i}", "issue_id": f"bd-{i}", "author": f"agent-{i % 20}",
                              "text": "A comment of the generated backlog.", "created_at": "2025-06-01T10:00:00Z"}]
    print(json.dumps(issue, separators=(",", ":")))
PY
echo "$N issues, $(du -h "$WORK/issues.jsonl" | cut -f1) of JSON lines"

"$TB" --data-dir "$WORK/board" init --password bench-password > /dev/null
"$TB" --data-dir "$WORK/board" project create --name Bench --slug bench -q > /dev/null

run() {
    /usr/bin/time -f "%e %M" -o "$WORK/time" "$TB" --data-dir "$WORK/board" --json \
        import --from beads "$WORK/issues.jsonl" --project bench --create-members > "$WORK/plan.json"
    read -r SECONDS_TAKEN PEAK_KB < "$WORK/time"
    SUMMARY="$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["created"], "created,", p["updated"], "updated,", p["unchanged"], "unchanged,", p["skipped"], "skipped")' "$WORK/plan.json")"
    echo "$1: ${SECONDS_TAKEN} s, peak RSS $((PEAK_KB / 1024)) MiB ($SUMMARY)"
}
run "first import"
run "second import"
