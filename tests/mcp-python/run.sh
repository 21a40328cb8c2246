#!/usr/bin/env bash
# The MCP server checked with an independent client, the official Python
# SDK (`mcp`, pinned, installed with pip under the target directory):
# tests/mcp-python/flow.py against a real server's /mcp and against
# `taskboard mcp` over stdio. Usage: tests/mcp-python/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/mcp-python
target=${CARGO_TARGET_DIR:-target}
work=$target/mcp-python
mkdir -p "$work"
work=$(cd "$work" && pwd)

# tests/all.sh has built the binaries already (TASKBOARD_PREBUILT).
[ -n "${TASKBOARD_PREBUILT:-}" ] || cargo build -q -p taskboard-server -p taskboard-cli
server=$target/debug/taskboard-server
taskboard=$(cd "$target/debug" && pwd)/taskboard

if ! "$work/venv/bin/python" -c "import mcp, jsonschema" 2>/dev/null \
  || [ "$("$work/venv/bin/pip" show mcp 2>/dev/null | sed -n 's/^Version: //p')" != "2.3.0" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q --disable-pip-version-check "mcp==2.3.0"
fi

data=$(mktemp -d)
log=$(mktemp)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$data" "$log"' EXIT
TASKBOARD_OWNER_PASSWORD=owner-password-1 "$server" --listen 127.0.0.1:0 --data-dir "$data/board" >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
base=$(grep -o 'http://[0-9.]*:[0-9]*' "$log" | tail -1)

"$work/venv/bin/python" "$here/flow.py" "$base" owner-password-1 "$taskboard"
