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
# The lint check comes with the build of the tests: clippy-driver, as the
# workspace's compiler, compiles the workspace's own crates as rustc does
# and runs clippy's lints on them, so the code is compiled once instead of
# checked by `cargo clippy` and then built again; RUSTFLAGS=-Dwarnings (the
# setting clippy's documentation gives for CI) makes every warning,
# rustc's or clippy's, an error. Every target is built (and so linted):
# the library, binaries, tests, examples and the benchmark; all but the
# benchmark then run, and the doc-tests. Exported, so the cargo commands
# of the tests and scripts below share the build instead of making
# another one.
export RUSTC_WORKSPACE_WRAPPER=clippy-driver RUSTFLAGS=-Dwarnings
step cargo test --workspace --all-targets --no-run
# The parsing layer's property tests run here, 1,000 cases each.
step cargo test --workspace --lib --bins --tests --examples
step cargo test --workspace --doc
# The scripts below use the binaries just built (target/debug) rather
# than building them with another selection of packages, whose features
# would differ and so build the workspace again.
export TASKBOARD_PREBUILT=1
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
# README's "A first hour", run as it is written on a fresh directory: a
# server, people and an agent, a project on a bare git repository, a
# runner's run to review, an import, a backup and its restore.
step bash tests/first_hour.sh
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
