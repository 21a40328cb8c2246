#!/usr/bin/env bash
# Builds the Debian package of Taskboard (both binaries, the systemd unit
# and /etc/taskboard/server.toml) with cargo-deb, installing cargo-deb
# first when it is missing. Prints the path of the .deb on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

# The version is pinned: a newer cargo-deb may refuse the dev profile.
CARGO_DEB_VERSION=3.8.0
if ! cargo deb --version 2>/dev/null | grep -qx "cargo-deb $CARGO_DEB_VERSION"; then
  cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION"
fi
# cargo-deb builds the package it is asked for; the `taskboard` binary
# comes from taskboard-cli, so both are built first, in one build.
# TASKBOARD_DEB_PROFILE=dev packages the test build's binaries instead of
# a release build: CI checks the package's making, installing and serving
# that way without a second, optimised build of the workspace.
profile=${TASKBOARD_DEB_PROFILE:-release}
# tests/all.sh has built the dev binaries already (TASKBOARD_PREBUILT).
if [ "$profile" != dev ] || [ -z "${TASKBOARD_PREBUILT:-}" ]; then
  cargo build --profile "$profile" -p taskboard-server -p taskboard-cli
fi
cargo deb -p taskboard-server --no-build --profile "$profile" "$@" | tail -n 1
