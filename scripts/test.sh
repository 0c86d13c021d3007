#!/usr/bin/env bash
# The test suite on real Postgres, Redis and anvil; installs what is missing first.
# Files run in parallel (each owns its database, Redis prefix and ports); test/timings.json, the
# per-file durations of a full run, makes the slowest start first. Refresh it after adding a slow
# file: ./scripts/test.sh --update-timings
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
# Scratch databases in a tablespace in memory where this machine allows one (the server here,
# run as root): making one on disk cost the server ~300 ms of CPU amid the suite's churn of them,
# ~20 ms in memory (scratch/memory-tablespace.ts). Elsewhere they stay on disk.
export SCRATCH_TABLESPACE="${SCRATCH_TABLESPACE-$(bun scratch/memory-tablespace.ts)}"
# Info logs from the indexer under test would bury the test report.
export LOG_LEVEL="${LOG_LEVEL:-warn}"
# The tests' CLI and API children run from the compiled binary of this tree (test/support/
# commands.ts says why), built once and kept under dist/test/ by a hash of every file outside
# test/ and of Bun's version: a rerun on the same tree reuses it, a change anywhere builds anew.
# A file deleted but still tracked drops out of the hash (sha256sum skips it), which changes it.
# Outside a git checkout nothing lists the files: each run builds anew.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  key="$({
    bun --version
    git ls-files -z --cached --others --exclude-standard -- ':!:test/' |
      xargs -0 -r sha256sum 2>/dev/null || true
  } | sha256sum | cut -c1-16)"
else
  key="unlisted-$$"
fi
export CS_TEST_BINARY="$PWD/dist/test/citizen-staking-$key"
if [ ! -x "$CS_TEST_BINARY" ]; then
  rm -rf dist/test
  ./scripts/build-binary.sh "$CS_TEST_BINARY" >/dev/null
fi
# Files at once: a file waits on anvil, Postgres and child processes, but the whole suite is bound
# by the two cores: before the binary above and --no-isolate below, 3 at once took 250 s and 5
# took 230-236 s (377-381 CPU-seconds of its own) on one machine; on a slower one the binary and
# --no-isolate took the run from 608 to 479 CPU-seconds, 363 to 298 s.
# Test harnesses give idle connections back (test/support/indexer.ts), so 5 peak at about 53 of
# Postgres's 100 default connections (pg_stat_activity sampled every 0.5 s).
# --no-isolate: each of the 5 worker processes keeps its modules from file to file, where it
# loaded and evaluated the tree again for each of the 91 integration files (~0.4 CPU-s a file).
# No test changes process.env or mocks a module, and every file passes so (checked in batches at
# --parallel=2); TEST_ISOLATE=1 gives each file a fresh global again, to rule leftovers out.
isolate=(--no-isolate)
[ -z "${TEST_ISOLATE:-}" ] || isolate=()
exec bun test --timeout 180000 --parallel="${TEST_PARALLEL:-5}" "${isolate[@]}" \
  --timings=test/timings.json "$@"
