/**
 * Slow builds a test checks the output of (the packed client, solc's compile), kept under
 * ~/.cache beside the scenario chains and keyed by a hash of every file and tool version that
 * decides their output: a change to any of them makes a new build, so a kept one is what a fresh
 * build would make. Outside the clone, a fresh clone on the same machine finds them.
 */
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { config } from "../../lib/config.ts";
import { withDatabase } from "../../lib/database-url.ts";

export const BUILD_CACHE_DIR = join(homedir(), ".cache", "citizen-staking", "builds");

const ROOT = join(import.meta.dir, "..", "..");

/** A hash of the files matching `patterns` (relative to the repository root), names and bytes. */
export async function hashSources(patterns: string[], extra: string[] = []): Promise<string> {
  const hasher = new Bun.CryptoHasher("sha256");
  const files = new Set<string>();
  for (const pattern of patterns) {
    for await (const file of new Bun.Glob(pattern).scan({ cwd: ROOT })) files.add(file);
  }
  for (const file of [...files].sort()) {
    hasher.update(`${file}\0`);
    hasher.update(await Bun.file(join(ROOT, file)).arrayBuffer());
  }
  for (const each of extra) hasher.update(`\0${each}`);
  return hasher.digest("hex").slice(0, 16);
}

/**
 * The folder holding `name`'s build for `key`. Files running side by side build one at a time
 * under a Postgres advisory lock (released with the session if a builder dies): two builds at
 * once could share their outputs on the way (npm pack writes client/dist), and the second finds
 * the first's. `build` fills a folder of its own, moved into place in one rename, so a build cut
 * short leaves nothing behind.
 */
export async function cachedBuild(
  name: string,
  key: string,
  build: (folder: string) => Promise<void>,
): Promise<string> {
  const folder = join(BUILD_CACHE_DIR, `${name}-${key}`);
  if (existsSync(folder)) return folder;
  const lock = postgres(withDatabase(config.databaseUrl, "postgres"), {
    max: 1,
    onnotice: () => {},
  });
  try {
    await lock`select pg_advisory_lock(hashtext(${`citizen-staking:build:${name}`}))`;
    if (existsSync(folder)) return folder;
    const partial = `${folder}.${process.pid}.partial`;
    await rm(partial, { recursive: true, force: true });
    await mkdir(partial, { recursive: true });
    try {
      await build(partial);
      await rename(partial, folder);
    } catch (error) {
      await rm(partial, { recursive: true, force: true });
      throw error;
    }
    return folder;
  } finally {
    await lock.end({ timeout: 5 });
  }
}
