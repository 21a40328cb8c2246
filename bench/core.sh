#!/usr/bin/env bash
# Benchmarks of taskboard-core: durable task creation with 1 and 64
# writers, get by id, and the list calls on boards of 10,000 and 100,000
# tasks/messages. Seeds its boards once per run in a temporary directory
# under target/ (on the same disk as a real data directory). A few minutes.
#
#   bench/core.sh                 # everything
#   bench/core.sh list_tasks      # only the benchmarks whose name matches
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench -p taskboard-core --bench board -- "$@"
