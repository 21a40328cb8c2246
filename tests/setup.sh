#!/usr/bin/env bash
# Installs what the tests need and a fresh Debian or Ubuntu machine with
# only the Rust toolchain lacks: rustfmt and clippy, Chromium and its
# driver (the web board's browser tests), PostgreSQL (the tests start
# their own throwaway cluster with its binaries), python3 with venv and
# node with npm (tests/*/run.sh install their pinned packages under the
# target directory), curl and openssl. Installs nothing that is there.
# Needs root (or sudo) for apt-get.
set -euo pipefail

missing=()
have() { command -v "$1" >/dev/null 2>&1; }
have chromium || missing+=(chromium)
have chromedriver || missing+=(chromium-driver)
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! have initdb; then
  missing+=(postgresql)
fi
have python3 || missing+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
have node || missing+=(nodejs)
have npm || missing+=(npm)
have curl || missing+=(curl)
have openssl || missing+=(openssl)
have runuser || missing+=(util-linux)
# The Debian package depends on it: reqwest checks certificates against
# the system's store.
[ -d /etc/ssl/certs ] && dpkg -s ca-certificates >/dev/null 2>&1 || missing+=(ca-certificates)

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  echo "tests/setup.sh: installing ${missing[*]}"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add rustfmt clippy
fi
echo "tests/setup.sh: everything the tests need is installed"
