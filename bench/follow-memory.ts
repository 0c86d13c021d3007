/**
 * Whether `follow`'s memory levels off: a devnet producing staker activity every second, one
 * follow process indexing it, its resident memory sampled every 15 s. Bun's collector lets the
 * heap grow for minutes before a full collection, so RSS rises as a sawtooth; a leak shows as
 * floors (the lowest RSS of each third of the run) that keep rising, a plateau as floors that
 * do not.
 *
 *   bun bench/follow-memory.ts [--minutes 10]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../devnet/anvil.ts";
import { createScratchDatabase } from "../scratch/database.ts";
import { createScratchRedisPrefix } from "../scratch/redis.ts";
import { flag, readFlags, runMain } from "./support/flags.ts";
import { spawnBun } from "./support/processes.ts";

const SAMPLE_MS = 15_000;
const MB = 1024 * 1024;
const WARM_UP_S = 120;

runMain(async () => {
  const { minutes } = readFlags({ minutes: flag.number("10", "1") });
  const dir = mkdtempSync(join(tmpdir(), "cs-follow-memory-"));
  const devnetFile = join(dir, "devnet.json");
  const port = await freePort();
  const database = await createScratchDatabase("follow_memory");
  const redis = createScratchRedisPrefix("follow-memory");
  const devnet = spawnBun(
    "follow-memory-devnet",
    ["scripts/devnet.ts", "--port", String(port), "--events", "200", "--live", "1000"],
    { DEVNET_FILE: devnetFile },
  );
  try {
    await until(() => {
      devnet.assertAlive();
      return Bun.file(devnetFile).exists();
    });
    const follow = spawnBun("follow-memory-follow", ["scripts/cli.ts", "follow"], {
      DEVNET_FILE: devnetFile,
      RPC_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix,
      LOG_LEVEL: "warn",
    });
    const samples: { second: number; rss: number }[] = [];
    const started = Date.now();
    try {
      while (Date.now() - started < minutes * 60_000) {
        follow.assertAlive();
        const sample = {
          second: Math.round((Date.now() - started) / 1000),
          rss: await follow.rssBytes(),
        };
        samples.push(sample);
        console.log(`${String(sample.second).padStart(5)} s  ${(sample.rss / MB).toFixed(1)} MB`);
        await Bun.sleep(SAMPLE_MS);
      }
    } finally {
      await follow.stop();
    }
    // The first two minutes are start-up (the process loading, the first catch-up).
    const settled = samples.filter((sample) => sample.second >= WARM_UP_S);
    const third = Math.ceil(settled.length / 3);
    const floors = [0, 1, 2]
      .map((part) => settled.slice(part * third, (part + 1) * third))
      .filter((part) => part.length > 0)
      .map((part) => Math.min(...part.map((sample) => sample.rss)));
    const peak = Math.max(...samples.map((sample) => sample.rss));
    console.log(
      `floors by third of the run after the first 2 minutes: ${floors.map((floor) => `${(floor / MB).toFixed(1)} MB`).join(", ")}; peak ${(peak / MB).toFixed(1)} MB`,
    );
  } finally {
    await devnet.stop();
    await database.drop();
    await redis.clean();
    rmSync(dir, { recursive: true, force: true });
  }
});

async function until(ready: () => Promise<boolean>) {
  const deadline = Date.now() + 120_000;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error("the devnet did not write its file in 2 minutes");
    await Bun.sleep(250);
  }
}
