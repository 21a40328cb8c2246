#!/usr/bin/env bash
# Schemathesis against a real server: every operation of /openapi.json is
# called with generated requests (examples, coverage, fuzzing and the
# stateful phase, which follows the document's links from created
# resources), and every response is checked against the document. Fails
# on any check failure. Seeded and bounded, so a run is repeatable and
# takes about three minutes on two cores (fuzzing 50 examples per operation).
#
#   tests/schemathesis/run.sh            # builds the debug server first
#   EXAMPLES=100 tests/schemathesis/run.sh
#
# The pinned schemathesis is installed with pip into a virtual environment
# under the target directory (SCHEMATHESIS_VENV to put it elsewhere).
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION=4.32.5
SEED=${SEED:-20261123}
EXAMPLES=${EXAMPLES:-50}
TARGET=${CARGO_TARGET_DIR:-target}
VENV=${SCHEMATHESIS_VENV:-$TARGET/schemathesis-venv}
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
config="$PWD/tests/schemathesis/schemathesis.toml"
# Every check but one. positive_data_acceptance: a schema cannot say
# every rule (a message needs chat_id or task_id, the project owner cannot
# be removed), so a request that fits the schema may still be refused with
# a documented 4xx. negative_data_rejection (a request that breaks the
# schema must be refused) runs everywhere but on multipart uploads, whose
# file part is bytes whatever they look like.
CHECKS=${CHECKS:-all}
EXCLUDE_CHECKS=${EXCLUDE_CHECKS:-positive_data_acceptance}

if ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -qF "$VERSION"; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION"
fi

# tests/all.sh has built the binaries already (TASKBOARD_PREBUILT).
[ -n "${TASKBOARD_PREBUILT:-}" ] || cargo build --quiet -p taskboard-server
server_bin="$TARGET/debug/taskboard-server"

work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

password=schemathesis-owner-password
TASKBOARD_OWNER_PASSWORD=$password "$server_bin" --listen 127.0.0.1:0 --data-dir "$work/data" \
  --dev --log-level warn >"$work/stdout" 2>"$work/stderr" &
server_pid=$!

# The server prints its address once it listens.
base=
for _ in $(seq 1 300); do
  base=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$work/stdout")
  [ -n "$base" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/stderr" >&2; exit 1; }
  sleep 0.1
done
[ -n "$base" ] || { echo "the server did not start" >&2; exit 1; }

login() {
  python3 - "$base" "$password" <<'PY'
import json, sys, urllib.request
base, password = sys.argv[1], sys.argv[2]
req = urllib.request.Request(
    base + "/api/v1/auth/login",
    data=json.dumps({"login": "owner", "password": password}).encode(),
    headers={"content-type": "application/json"},
)
print(json.load(urllib.request.urlopen(req))["token"])
PY
}

# Operations that change the caller's own credentials or role (a
# generated PATCH may demote the owner, a generated password replaces
# its password) run last, in a run of their own, so they cannot lock the
# rest of the run out.
credential_ops=(update_member delete_member set_password regenerate_token revoke_token)
# Operations whose body is multipart, read from the document.
mapfile -t multipart_ops < <(python3 - "$base" <<'PY'
import json, sys, urllib.request
doc = json.load(urllib.request.urlopen(sys.argv[1] + "/openapi.json"))
for item in doc["paths"].values():
    for op in item.values():
        if "multipart/form-data" in op.get("requestBody", {}).get("content", {}):
            print(op["operationId"])
PY
)
[ "${#multipart_ops[@]}" -gt 0 ] || { echo "no multipart operation found" >&2; exit 1; }
exclude=()
include=()
uploads=()
for op in "${credential_ops[@]}"; do
  exclude+=(--exclude-operation-id "$op")
  include+=(--include-operation-id "$op")
done
for op in "${multipart_ops[@]}"; do
  exclude+=(--exclude-operation-id "$op")
  uploads+=(--include-operation-id "$op")
done

run() {
  local token excluded=$EXCLUDE_CHECKS phases=examples,coverage,fuzzing,stateful
  if [ "$1" = --uploads ]; then
    # No links join the uploads to each other, so no stateful phase.
    excluded="$excluded,negative_data_rejection"
    phases=examples,coverage,fuzzing
    shift
  fi
  token=$(login)
  # From the scratch directory: schemathesis keeps a cache in the current
  # directory. One worker: with two, the workers are threads of one
  # Python, and Python 3.11's parser keeps its recursion depth in state
  # the threads share, so two threads parsing at once (hypothesis parses
  # the source of a lambda to name it) fail now and then with "AST
  # constructor recursion depth mismatch" (CPython gh-106905). One worker
  # takes no longer here: the server shares the same two cores.
  (cd "$work" && "$VENV/bin/schemathesis" --config-file "$config" run "$base/openapi.json" \
    --header "Authorization: Bearer $token" \
    --checks "$CHECKS" --exclude-checks "$excluded" \
    --phases "$phases" \
    --seed "$SEED" --max-examples "$EXAMPLES" \
    --generation-database none \
    --workers 1 --no-color \
    --warnings off \
    "$@")
}

status=0
run "${exclude[@]}" || status=$?
run --uploads "${uploads[@]}" || status=$?
run "${include[@]}" || status=$?
if grep -q "panicked" "$work/stderr"; then
  echo "the server logged a panic:" >&2
  grep -A3 "panicked" "$work/stderr" >&2
  status=1
fi
exit "$status"
