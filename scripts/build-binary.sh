#!/usr/bin/env bash
# Builds dist/citizen-staking: every CLI command and the API in one executable that needs no Bun,
# node_modules or source tree. The SQL migrations are passed as extra entry points, which
# `bun build --compile` embeds as files under their own names (db/migrate.ts reads them back).
# Usage: scripts/build-binary.sh [OUTFILE] (default dist/citizen-staking); BUN_TARGET picks
# another platform, e.g. bun-linux-arm64.
set -euo pipefail
cd "$(dirname "$0")/.."
outfile="${1:-dist/citizen-staking}"
mkdir -p "$(dirname "$outfile")"
target=()
[ -z "${BUN_TARGET:-}" ] || target=(--target "$BUN_TARGET")
# --sourcemap embeds the map in the binary (zstd, ~4 MB), where a stack trace finds it: traces
# name our source files and lines with no file beside the binary. Bun also writes a map file per
# entry point next to it (the binary's, and an empty one per migration), which nothing reads, so
# the build runs in a directory of its own and only the binary leaves it.
build="$(mktemp -d "$(dirname "$outfile")/.build.XXXXXX")"
trap 'rm -rf "$build"' EXIT
# The record writer's version hashes its functions' text, which bundling rewrites: the binary
# carries the value the source gives (api/modules/citizens/record.ts RECORD_WRITER), so the
# binary and the source of one tree agree on which stored records are theirs.
record_writer="$(bun -e 'console.log((await import("./api/modules/citizens/record.ts")).RECORD_WRITER)')"
# --bytecode: the bundle is parsed and compiled at build time, not at each start: a start (the
# CLI's --help) took 0.43-0.46 CPU-s without it and 0.11-0.12 with it (the suite starts the
# binary about 200 times). Bytecode wants the module format said: ESM (cli.ts awaits at its top).
bun build --compile --bytecode --format esm "${target[@]}" --sourcemap \
  --define "BUILT_RECORD_WRITER=\"$record_writer\"" \
  --asset-naming='[name].[ext]' \
  scripts/cli.ts db/migrations/*.sql \
  --outfile "$build/$(basename "$outfile")"
rm -f "$build"/*.map
mv "$build"/* "$(dirname "$outfile")/"
