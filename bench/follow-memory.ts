/**
 * Whether `follow`'s memory levels off (docs/performance.md, "Follower memory"). RSS is a sawtooth
 * (Bun's collector lets the heap grow for minutes): a leak shows as floors that keep rising.
 *
 *   bun bench/follow-memory.ts [--minutes 10]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../devnet/anvil.ts";
import { flag, readFlags, runMain } from "./support/flags.ts";
import { openScratch } from "./support/harness.ts";

const SAMPLE_MS = 15_000;
const MB = 1024 * 1024;
const WARM_UP_S = 120;
const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;

runMain(async () => {
  const { minutes } = readFlags({ minutes: flag.number("10", "1") });
  const dir = mkdtempSync(join(tmpdir(), "cs-follow-memory-"));
  const devnetFile = join(dir, "devnet.json");
  const port = await freePort();
  await using run = await openScratch("follow_memory");
  try {
    const devnet = ["scripts/devnet.ts", "--port", `${port}`, "--events", "200", "--live", "1000"];
    run.spawn("follow-memory-devnet", devnet, { DEVNET_FILE: devnetFile });
    const written = () => Bun.file(devnetFile).exists();
    await run.waitUntil("the devnet writing its file", written, { pollMs: 250 });
    const follow = run.spawn("follow-memory-follow", ["scripts/cli.ts", "follow"], {
      DEVNET_FILE: devnetFile,
      RPC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "warn",
    });
    const samples: { second: number; rss: number }[] = [];
    const started = Date.now();
    try {
      while (Date.now() - started < minutes * 60_000) {
        follow.assertAlive();
        const [second, rss] = [Math.round((Date.now() - started) / 1000), await follow.rssBytes()];
        samples.push({ second, rss });
        console.log(`${String(second).padStart(5)} s  ${mb(rss)}`);
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
    const summary = `${floors.map(mb).join(", ")}; peak ${mb(peak)}`;
    console.log(`floors by third of the run after the first 2 minutes: ${summary}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
