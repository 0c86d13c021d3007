#!/usr/bin/env bash
# Installs what the project needs on a machine that has only Node/npm: Bun, the dependencies
# (anvil and solc come with them from npm), then checks that Postgres and Redis answer.
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

bun scripts/preflight.ts
