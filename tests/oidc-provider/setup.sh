#!/usr/bin/env bash
# The test OpenID Connect provider (tests/oidc-provider/provider.mjs): the
# `oidc-provider` package and `jose`, pinned by package.json and
# package-lock.json, installed with `npm ci` under the target directory,
# once, and the script copied beside them. Prints the path of the copied
# script. The single sign-on tests call it (tests/oidc-provider/harness.rs).
# Usage: tests/oidc-provider/setup.sh [TARGET_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=${1:-${CARGO_TARGET_DIR:-$here/../../target}}
work=$target/oidc-provider
mkdir -p "$work"
work=$(cd "$work" && pwd)
# Test threads and processes running at once install it once.
exec 9>"$work/.lock"
flock 9
if ! cmp -s "$here/package-lock.json" "$work/package-lock.json" || [ ! -d "$work/node_modules/oidc-provider" ]; then
  cp "$here/package.json" "$here/package-lock.json" "$work/"
  rm -rf "$work/node_modules"
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi
cp "$here/provider.mjs" "$work/provider.mjs.new"
mv "$work/provider.mjs.new" "$work/provider.mjs"
echo "$work/provider.mjs"
