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
# Files at once: most of a file's time is waiting on anvil, Postgres and child processes. Quiet,
# 3 took 250 s and 4 took 220 s, but 4 reached 91 of Postgres's 100 default connections (5 ran
# out): TEST_PARALLEL=4 where the server allows more.
exec bun test --timeout 180000 --parallel="${TEST_PARALLEL:-3}" --timings=test/timings.json "$@"
