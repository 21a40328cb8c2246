#!/usr/bin/env bash
# Generates a Python client (openapi-python-client) and a TypeScript one
# (@hey-api/openapi-ts) from a running server's /openapi.json, and uses
# each to log in, create a project and a task, and take it as an agent.
# Needs python3 and node/npm; installs the generators (pinned) into
# target/clients. Usage: tests/clients/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/clients
work=${CARGO_TARGET_DIR:-target}/clients
mkdir -p "$work"
work=$(cd "$work" && pwd)

# tests/all.sh has built the binaries already (TASKBOARD_PREBUILT).
[ -n "${TASKBOARD_PREBUILT:-}" ] || cargo build -q -p taskboard-server
server=${CARGO_TARGET_DIR:-target}/debug/taskboard-server

if [ ! -x "$work/venv/bin/openapi-python-client" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q "openapi-python-client==0.29.1"
fi
if [ ! -d "$work/node_modules/@hey-api/openapi-ts" ]; then
  (cd "$work" && npm init -y >/dev/null && npm pkg set type=module && npm install --silent --no-audit --no-fund \
    "@hey-api/openapi-ts@0.64.15" "@hey-api/client-fetch@0.8.4" "typescript@5.7.3" "tsx@4.19.2" "@types/node@20.17.10")
fi

data=$(mktemp -d)
log=$(mktemp)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$data" "$log"' EXIT
TASKBOARD_OWNER_PASSWORD=owner-password-1 "$server" --dev --listen 127.0.0.1:0 --data-dir "$data/board" >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
base=$(grep -o 'http://[0-9.]*:[0-9]*' "$log" | tail -1)
curl -sf "$base/openapi.json" -o "$work/openapi.json"

rm -rf "$work/py" "$work/ts"
"$work/venv/bin/openapi-python-client" generate --path "$work/openapi.json" --output-path "$work/py" --overwrite
PYTHONPATH="$work/py" "$work/venv/bin/python" "$here/flow.py" "$base" owner-password-1

(cd "$work" && npx openapi-ts -i openapi.json -o ts -c @hey-api/client-fetch >/dev/null)
cp "$here/flow.ts" "$work/flow.ts"
(cd "$work" && npx tsc --noEmit --strict --module esnext --moduleResolution bundler --target es2022 --types node --skipLibCheck flow.ts ts/*.ts \
  && npx tsx flow.ts "$base" owner-password-1)
