#!/usr/bin/env bash
# The test suite on real Postgres, Redis and anvil; installs what is missing first.
# Files run in parallel (each owns its database, Redis prefix and ports); test/timings.json, the
# per-file durations of a full run, makes the slowest start first. Refresh it after adding a slow
# file: ./scripts/test.sh --update-timings
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
# Info logs from the indexer under test would bury the test report.
export LOG_LEVEL="${LOG_LEVEL:-warn}"
# Files at once: most of a file's time is waiting on anvil, Postgres and child processes. Test
# harnesses give idle connections back (test/support/indexer.ts), so 5 at once fit under
# Postgres's 100 default connections: the 17 slowest files, 5 at once, peaked at 43 of the run's
# own (78 before), sampling pg_stat_activity while
#   LOG_LEVEL=warn bun test --timeout 180000 --parallel=5 <the 16 slowest files and missing-logs>
exec bun test --timeout 180000 --parallel="${TEST_PARALLEL:-5}" --timings=test/timings.json "$@"
