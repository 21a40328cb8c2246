#!/usr/bin/env bash
# CI: builds the Debian package, installs it with dpkg, starts the
# installed server as the package's user with the installed configuration
# file, checks GET /ready, and purges the package again.
set -euo pipefail
cd "$(dirname "$0")/.."

deb=$(bash packaging/build-deb.sh | tail -n 1)
echo "package: $deb"
test -f "$deb"

if dpkg -s taskboard >/dev/null 2>&1; then
  echo "a taskboard package is installed already; remove it first" >&2
  exit 1
fi
workdir=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  dpkg --purge taskboard >/dev/null 2>&1 || true
  rm -rf "$workdir" /var/lib/taskboard
}
trap cleanup EXIT

dpkg -i "$deb"

# What the package holds.
test -x /usr/bin/taskboard-server
test -x /usr/bin/taskboard
dpkg-query -W -f='${Conffiles}\n' taskboard | grep -q '/etc/taskboard/server.toml'
unit=$(dpkg -L taskboard | grep '/taskboard\.service$')
for line in User=taskboard ProtectSystem=strict NoNewPrivileges=yes PrivateTmp=yes StateDirectory=taskboard; do
  grep -qx "$line" "$unit" || { echo "the unit lacks $line" >&2; exit 1; }
done
getent passwd taskboard >/dev/null
test "$(stat -c '%U:%G %a' /etc/taskboard/server.toml)" = "root:taskboard 640"
if command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify "$unit"
fi
/usr/bin/taskboard-server config check /etc/taskboard/server.toml

# The installed server, as the package's user, with the installed file;
# only the address is moved to a free port (the environment wins over the
# file), as 8080 may be taken on this machine.
cd /var/lib/taskboard
# setpriv executes the server in its own process (runuser would stay as its
# parent and turn the server's clean exit on SIGTERM into a status of 143).
setpriv --reuid=taskboard --regid=taskboard --init-groups \
  env TASKBOARD_LISTEN=127.0.0.1:0 HOME=/var/lib/taskboard \
  /usr/bin/taskboard-server --config /etc/taskboard/server.toml \
  >"$workdir/stdout" 2>"$workdir/stderr" &
server_pid=$!
for _ in $(seq 1 600); do
  grep -q 'listening on ' "$workdir/stdout" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$workdir/stdout" "$workdir/stderr" >&2; exit 1; }
  sleep 0.1
done
url=$(grep -o 'listening on http://[0-9.:]*' "$workdir/stdout" | sed 's/listening on //')
test -n "$url" || { echo "the server did not start" >&2; cat "$workdir/stderr" >&2; exit 1; }
ready=$(curl -sS -w ' %{http_code}' "$url/ready")
echo "GET /ready: $ready"
case "$ready" in *'"status":"ready"'*' 200') ;; *) echo "not ready" >&2; exit 1 ;; esac
test -f /var/lib/taskboard/data/board.redb
test "$(stat -c '%U' /var/lib/taskboard/data/board.redb)" = taskboard
# JSON log lines, as the installed file asks.
head -n 1 "$workdir/stderr" | grep -q '^{'
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=""
test "$status" = 0 || { echo "the server ended with status $status on SIGTERM" >&2; cat "$workdir/stderr" >&2; exit 1; }
grep -q '"stopped"' "$workdir/stderr" || { echo "the server did not log its clean stop" >&2; exit 1; }
dpkg --purge taskboard
! dpkg -s taskboard >/dev/null 2>&1
test ! -e /etc/taskboard/server.toml
echo "ci-deb: package built, installed, served /ready and purged"
