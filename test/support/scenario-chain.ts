/**
 * Scenario chains generated once and loaded after. Replaying a seeded scenario sends thousands of
 * transactions (a 2,000-event one takes tens of seconds on a busy 2-core machine); loading anvil's
 * dump of the chain it leaves takes about a second. The dump keeps every historical state, so the
 * indexer's eth_calls at old blocks answer as on the chain that generated it.
 *
 * Only for files that read the chain as the scenario left it (mining empty blocks after is fine):
 * the generator's model of who holds what is not kept, so a file that goes on with
 * `scenario.live()` or sends scenario transactions starts its own (startScenarioDevnet).
 *
 * The key hashes the scenario's seed and size with every file that decides the chain (devnet/,
 * the generated contracts, anvil's version): a change to any of them makes a new chain. Chains live
 * under ~/.cache, outside the clone, so a fresh clone on the same machine finds them.
 */
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join, relative } from "node:path";
import { type AnvilNode, type AnvilOptions, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient, type DevnetClient } from "../../devnet/client.ts";
import { deployDevnet } from "../../devnet/deploy.ts";
import { Scenario, type ScenarioProgress } from "../../devnet/scenario.ts";
import {
  type DevnetDeployment,
  readDeploymentFile,
  writeDeploymentFile,
} from "../../lib/devnet-file.ts";

export const SCENARIO_CACHE_DIR = join(homedir(), ".cache", "citizen-staking", "scenarios");

const ROOT = join(import.meta.dir, "..", "..");
/** What decides the chain a seed gives: the generator, the contracts and the node. */
const CHAIN_SOURCES = ["devnet/**/*.ts", "contracts/generated/**/*", "lib/devnet-file.ts"];

export type ScenarioSpec = { seed: string; events: number; wallets?: number };

export type ScenarioChain = {
  node: AnvilNode;
  client: DevnetClient;
  deployment: DevnetDeployment;
  /** The scenario's figures at its last block, as the generating run reported them. */
  progress: ScenarioProgress;
  /** Whether this call generated the chain (false: loaded from the cache). */
  generated: boolean;
  /** Citizens staked at the last block, and the generating run's seconds (older records: none). */
  citizensStaked?: number;
  generatedSeconds?: number;
  /** Anvil's dump of the chain. */
  stateFile: string;
  stop(): Promise<void>;
};

/** What a test indexer needs of a devnet: the node and the contracts (fresh or loaded). */
export type DevnetChain = Pick<ScenarioChain, "node" | "deployment">;

export class ScenarioChainInvalid extends Error {
  override name = "ScenarioChainInvalid";
}

/** The same default as startScenarioDevnet: one wallet per 50 events, at least 4. */
export function scenarioWallets(spec: ScenarioSpec): number {
  return spec.wallets ?? Math.max(4, Math.round(spec.events / 50));
}

let sourcesHash: Promise<string> | undefined;

/** One hash of every file that decides the chain, computed once per process. */
function chainSourcesHash(): Promise<string> {
  sourcesHash ??= (async () => {
    const hasher = new Bun.CryptoHasher("sha256");
    const files = new Set<string>();
    for (const pattern of CHAIN_SOURCES) {
      for await (const file of new Bun.Glob(pattern).scan({ cwd: ROOT })) files.add(file);
    }
    for (const file of [...files].sort()) {
      hasher.update(`${file}\0`);
      hasher.update(await Bun.file(join(ROOT, file)).arrayBuffer());
    }
    const anvil = Bun.resolveSync("@foundry-rs/anvil/package.json", ROOT);
    hasher.update(await Bun.file(anvil).text());
    return hasher.digest("hex");
  })();
  return sourcesHash;
}

export async function scenarioKey(spec: ScenarioSpec): Promise<string> {
  const hasher = new Bun.CryptoHasher("sha256");
  hasher.update(await chainSourcesHash());
  hasher.update(JSON.stringify([spec.seed, spec.events, scenarioWallets(spec)]));
  return `${spec.seed}-${spec.events}-${hasher.digest("hex").slice(0, 16)}`;
}

type Record = {
  progress: Omit<ScenarioProgress, "block"> & { block: string };
  citizensStaked?: number;
  generatedSeconds?: number;
};

/**
 * Generates the chain into a folder of its own and moves it into place in one rename, so files
 * running in parallel never see half a chain (two generating the same key: the first rename wins).
 */
async function generate(
  spec: ScenarioSpec,
  folder: string,
  anvil: Omit<AnvilOptions, "dumpStateTo" | "loadStateFrom"> = {},
): Promise<void> {
  const started = performance.now();
  const partial = `${folder}.${process.pid}.partial`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  // The caller's node options hold for generating too (the 100,000-event scenario's batches
  // need unlimited request bodies).
  const node = await startAnvil({ ...anvil, dumpStateTo: join(partial, "state.json") });
  try {
    const client = createDevnetClient(node.rpcUrl);
    const deployment = await deployDevnet(client);
    const scenario = await Scenario.prepare(client, deployment, {
      seed: spec.seed,
      wallets: scenarioWallets(spec),
    });
    const progress = await scenario.run({ events: spec.events });
    await writeDeploymentFile(join(partial, "deployment.json"), deployment);
    const record: Record = {
      progress: { ...progress, block: progress.block.toString() },
      citizensStaked: scenario.citizensStaked,
      generatedSeconds: Math.round((performance.now() - started) / 100) / 10,
    };
    await writeFile(join(partial, "record.json"), `${JSON.stringify(record, null, 2)}\n`);
  } finally {
    // Anvil writes the dump as it exits.
    await node.stop();
  }
  await rename(partial, folder).catch(async (error: NodeJS.ErrnoException) => {
    await rm(partial, { recursive: true, force: true });
    if (!existsSync(folder)) throw error;
  });
}

/** Anvil holding the chain the seeded scenario leaves: loaded when cached, generated first if not. */
export async function startScenarioChain(
  spec: ScenarioSpec & { anvil?: Omit<AnvilOptions, "dumpStateTo" | "loadStateFrom"> },
): Promise<ScenarioChain> {
  const folder = join(SCENARIO_CACHE_DIR, await scenarioKey(spec));
  const generated = !existsSync(join(folder, "record.json"));
  if (generated) await generate(spec, folder, spec.anvil);
  const record = JSON.parse(await readFile(join(folder, "record.json"), "utf8")) as Record;
  const progress = { ...record.progress, block: BigInt(record.progress.block) };
  const node = await startAnvil({
    ...spec.anvil,
    loadStateFrom: join(folder, "state.json"),
    startTimeoutMs: Math.max(spec.anvil?.startTimeoutMs ?? 0, 60_000),
  });
  const client = createDevnetClient(node.rpcUrl);
  const head = await client.getBlockNumber();
  if (head !== progress.block) {
    await node.stop();
    throw new ScenarioChainInvalid(
      `${relative(SCENARIO_CACHE_DIR, folder)} loads to head ${head}, its record says ` +
        `${progress.block}; delete ${folder}`,
    );
  }
  const deployment = await readDeploymentFile(join(folder, "deployment.json"));
  return {
    node,
    client,
    deployment: { ...deployment, rpcUrl: node.rpcUrl },
    progress,
    generated,
    citizensStaked: record.citizensStaked,
    generatedSeconds: record.generatedSeconds,
    stateFile: join(folder, "state.json"),
    stop: () => node.stop(),
  };
}
