#!/usr/bin/env bash
# The fleet tests: processes on test hosts of their own (network namespaces on a bridge, made
# and removed by each test) with a Postgres server of their own, and API instances behind a
# load balancer (haproxy). Not part of `bun test` (root for `ip netns`, Debian's Postgres
# binaries and haproxy, a few minutes). Usage: as root, after
# scripts/bootstrap.sh,
#   scripts/fleet-test.sh [bun test options, e.g. -t 'network cut']
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for command in ip unshare setpriv /usr/lib/postgresql/15/bin/initdb /usr/sbin/haproxy; do
  command -v "$command" >/dev/null 2>&1 || missing+=("$command")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fleet-test: missing ${missing[*]} (iproute2, util-linux, postgresql-15, haproxy)" >&2
  exit 1
fi
export LOG_LEVEL="${LOG_LEVEL:-warn}"
exec bun test --timeout 600000 ./test/fleet/*.fleet.ts "$@"
