#!/usr/bin/env bash
# The Python environment of the test ACP agent (tests/acp-python/agent.py):
# the official Python SDK, `agent-client-protocol` (pinned), installed with
# pip into a venv under the target directory, once. Prints the venv's
# python. The runner's ACP tests (tests/tests/cli/runner_acp.rs) call it.
# Usage: tests/acp-python/setup.sh [TARGET_DIR]
set -euo pipefail
version=0.12.1
target=${1:-${CARGO_TARGET_DIR:-$(dirname "$0")/../../target}}
work=$target/acp-python
mkdir -p "$work"
work=$(cd "$work" && pwd)
# Test threads and processes running at once install it once.
exec 9>"$work/.lock"
flock 9
python=$work/venv/bin/python
if ! "$python" -c "import acp" 2>/dev/null \
  || [ "$("$python" -c 'import importlib.metadata as m; print(m.version("agent-client-protocol"))')" != "$version" ]; then
  rm -rf "$work/venv"
  python3 -m venv "$work/venv" >&2
  "$work/venv/bin/pip" install -q --disable-pip-version-check "agent-client-protocol==$version" >&2
fi
echo "$python"
