#!/usr/bin/env bash
# The test suite on real Postgres, Redis and anvil; installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
# Info logs from the indexer under test would bury the test report.
export LOG_LEVEL="${LOG_LEVEL:-warn}"
exec bun test --timeout 180000 "$@"
