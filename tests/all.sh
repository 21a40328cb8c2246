#!/usr/bin/env bash
# Every test, on a fresh machine too: installs what is missing
# (tests/setup.sh), then format and lint checks, the Rust tests, and the
# scripted suites against real servers. `.ci/run` runs this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's time goes to the log, so a slow CI run shows where it went.
started=$SECONDS
step() {
  local at=$SECONDS
  "$@"
  echo "tests/all.sh: $((SECONDS - at)) s for $*; $((SECONDS - started)) s in all" >&2
}

step bash tests/setup.sh
step cargo fmt --all -- --check
step cargo clippy --workspace --all-targets -- -D warnings
# The parsing layer's property tests run here, 1,000 cases each.
step cargo test --workspace
# Schemathesis against the debug server: seeded, bounded, about two
# minutes; fails on any check failure.
step bash tests/schemathesis/run.sh
# Clients generated from /openapi.json by openapi-python-client and
# @hey-api/openapi-ts (pinned, installed under the target directory) log
# in, create a task and take it as an agent.
step bash tests/clients/run.sh
# The MCP server through the official Python SDK (pinned, installed under
# the target directory): tools and their schemas, the work loop, a refused
# call and a resource subscription over HTTP, and `taskboard mcp` over stdio.
step bash tests/mcp-python/run.sh
# The Debian package: built, installed with dpkg, the installed server
# started with the installed configuration and ready, then purged. It
# installs system files, so it runs where that is wanted: in CI, or
# with TASKBOARD_TEST_PACKAGE=1.
# CI packages the binaries `cargo test` built (TASKBOARD_DEB_PROFILE=dev):
# an optimised build would double the run's time on a 2-core machine;
# `bash packaging/build-deb.sh` alone makes the release package.
if [ "${CI:-}" = true ] || [ "${TASKBOARD_TEST_PACKAGE:-}" = 1 ]; then
  TASKBOARD_DEB_PROFILE=${TASKBOARD_DEB_PROFILE:-dev} step bash packaging/ci-deb.sh
fi
