#!/usr/bin/env bash
# Installs what the project needs on a machine that has only Node/npm: Bun, the dependencies
# (anvil and solc come with them from npm), Debian's chromium (the docs page's browser test), wrk
# (the API benchmark's load generator), docker-compose (checks docker-compose.yml offline, no
# Docker engine needed), redis-sentinel (the Redis failover test) and haproxy (the load balancer
# of the API fleet test), then checks that Postgres and Redis answer.
set -euo pipefail
cd "$(dirname "$0")/.."

BUN_VERSION=1.4.5

if ! command -v bun >/dev/null 2>&1; then
  echo "bootstrap: installing bun ${BUN_VERSION} from npm" >&2
  npm install -g "bun@${BUN_VERSION}" >/dev/null 2>&1 || npm install -g "bun@${BUN_VERSION}"
fi

if [ ! -d node_modules ] || [ bun.lock -nt node_modules ]; then
  echo "bootstrap: installing dependencies" >&2
  bun install --frozen-lockfile >/dev/null
  touch node_modules
fi

# Debian packages, each only when its command is missing.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v redis-sentinel >/dev/null 2>&1 || missing+=(redis-sentinel)
# In /usr/sbin, which a user's PATH may not hold.
[ -x /usr/sbin/haproxy ] || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]} from Debian" >&2
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

bun scripts/preflight.ts
