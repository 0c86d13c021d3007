#!/usr/bin/env bash
# The test suite on real Postgres, Redis and anvil; installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
exec bun test --timeout 180000 "$@"
