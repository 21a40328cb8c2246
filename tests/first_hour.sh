#!/usr/bin/env bash
# README's "A first hour" run as it is written, on a fresh directory: the
# sh block under that heading, with only its port changed to a free one.
# Fails when a command of it fails, when it prints an error, or when what
# README says each step leads to is not there. Usage: tests/first_hour.sh
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}

# tests/all.sh has built the binaries already (TASKBOARD_PREBUILT).
[ -n "${TASKBOARD_PREBUILT:-}" ] || cargo build -q -p taskboard-server -p taskboard-cli
bin=$(cd "$target/debug" && pwd)

work=$(mktemp -d)
mkdir -p "$work/home" "$work/board"
block=$work/block.sh
awk '/^## A first hour/ { heading = 1 } heading && /^```sh/ { inside = 1; next }
     inside && /^```/ { exit } inside { print }' README.md > "$work/readme-block.sh"
[ -s "$work/readme-block.sh" ] || { echo "first_hour.sh: no sh block under '## A first hour' in README.md" >&2; exit 1; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
{
  # The session's id, to stop what the block left running in the background.
  echo 'echo $$ > "$SESSION_FILE"'
  sed "s/127\.0\.0\.1:8080/127.0.0.1:$port/g" "$work/readme-block.sh"
} > "$block"

stop() {
  if [ -s "$work/session" ]; then kill -TERM -- "-$(cat "$work/session")" 2>/dev/null || true; fi
  sleep 0.5
  if [ -s "$work/session" ]; then kill -KILL -- "-$(cat "$work/session")" 2>/dev/null || true; fi
}
trap 'stop; rm -rf "$work"' EXIT

fail() {
  echo "first_hour.sh: $1" >&2
  echo "--- output of README's block:" >&2
  cat "$work/out" >&2 || true
  for log in server.log runner.log; do
    echo "--- $log:" >&2
    cat "$work/board/$log" >&2 2>/dev/null || true
  done
  exit 1
}

started=$SECONDS
set +e
(
  cd "$work/board"
  env -u TASKBOARD_SERVER -u TASKBOARD_DATA_DIR -u TASKBOARD_DATABASE -u TASKBOARD_TOKEN \
    PATH="$bin:$PATH" HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" \
    TASKBOARD_CREDENTIALS="$work/home/credentials.json" SESSION_FILE="$work/session" \
    GIT_CONFIG_NOSYSTEM=1 \
    timeout 300 setsid bash -euo pipefail "$block"
) > "$work/out" 2>&1
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "README's block ended with exit code $rc"

# Nothing printed an error, and each step left what README says it does.
if grep -Eiq '^(error|fatal|warning)\b|panicked|command not found' "$work/out"; then
  fail "README's block printed an error"
fi
expect() {
  grep -Fq -- "$2" "$work/$1" || fail "no \"$2\" in $1"
}
expect out "alice"                       # the person, with her password
expect out "succeeded"                   # run list: the agent's run
expect out "CHANGELOG.md"                # review show: the change
expect out "Write the parser"            # import
expect out "Add a changelog"             # the restored board's tasks
expect out "runs and their transcripts are not in an archive"   # backup and restore say so
expect board/runner.log "coder claimed WEB-1 (Add a changelog)"
expect board/runner.log "ended succeeded"
if grep -Eq 'ERROR|panicked' "$work/board/server.log"; then fail "the server logged an error"; fi
echo "first_hour.sh: README's first hour ran in $((SECONDS - started)) s" >&2
