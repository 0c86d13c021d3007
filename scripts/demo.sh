#!/usr/bin/env bash
# The whole system on a local devnet: anvil, contracts, a scenario, the indexer and the API.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
exec bun scripts/demo.ts "$@"
