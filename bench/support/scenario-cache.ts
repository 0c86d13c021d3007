/**
 * A scenario chain generated once and kept: generating 100,000 events takes minutes, loading
 * them back takes seconds. The cache is anvil's own state dump with historical states (so the
 * indexer's eth_calls at old blocks still answer after a load) beside a JSON record of
 * the deployment and the scenario's figures, under bench/results/cache/. Request bodies to the
 * node are unlimited because the 100,000-event scenario's batches pass anvil's default 2 MiB cap.
 */
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient } from "../../devnet/client.ts";
import { type DevnetDeployment, deployDevnet, readDeploymentFile } from "../../devnet/deploy.ts";
import { Scenario } from "../../devnet/scenario.ts";

export const CACHE_DIR = join(import.meta.dir, "..", "results", "cache");

export type ScenarioSpec = { seed: string; events: number; wallets: number };

/** One wallet per 45 events: the 100,000-event scenario then leaves over 10,000 citizens staked. */
export function defaultWallets(events: number): number {
  return Math.max(4, Math.round(events / 45));
}

export type CachedScenario = ScenarioSpec & {
  deployment: DevnetDeployment;
  head: bigint;
  stakerEvents: number;
  transactions: number;
  citizensStaked: number;
  generatedSeconds: number;
  stateFile: string;
  stateBytes: number;
};

/** An anvil that dumps its state on exit (`dumpTo`), or starts from one (`loadFrom`). */
async function startStatefulAnvil(files: { dumpTo?: string; loadFrom?: string }) {
  const node = await startAnvil({
    dumpStateTo: files.dumpTo,
    loadStateFrom: files.loadFrom,
    unlimitedRequestSize: true,
    startTimeoutMs: 600_000,
  });
  return { rpcUrl: node.rpcUrl, pid: node.process.pid, stop: node.stop };
}

export class ScenarioCacheInvalid extends Error {
  override name = "ScenarioCacheInvalid";
}

function paths(spec: ScenarioSpec) {
  const name = `${spec.seed}-${spec.events}-${spec.wallets}`;
  return {
    record: join(CACHE_DIR, `${name}.json`),
    state: join(CACHE_DIR, `${name}.state.json`),
    deployment: join(CACHE_DIR, `${name}.deployment.json`),
  };
}

type RecordJson = Omit<CachedScenario, "deployment" | "head"> & { head: string };

async function readRecord(spec: ScenarioSpec): Promise<CachedScenario | undefined> {
  const files = paths(spec);
  if (!existsSync(files.record) || !existsSync(files.state)) return undefined;
  const record = JSON.parse(await readFile(files.record, "utf8")) as RecordJson;
  if (record.seed !== spec.seed || record.events !== spec.events) {
    throw new ScenarioCacheInvalid(`${files.record} describes another scenario`);
  }
  return {
    ...record,
    // Where the state is now: the record's own path is where it was written (another checkout
    // sharing this cache, since removed, wrote one that no longer exists).
    stateFile: files.state,
    head: BigInt(record.head),
    deployment: await readDeploymentFile(files.deployment),
  };
}

/** Generates the scenario on a fresh anvil that dumps its state on exit; returns the record. */
async function generate(
  spec: ScenarioSpec,
  progress: (line: string) => void,
): Promise<CachedScenario> {
  const files = paths(spec);
  await mkdir(CACHE_DIR, { recursive: true });
  const partial = `${files.state}.partial`;
  await rm(partial, { force: true });
  const started = performance.now();
  const node = await startStatefulAnvil({ dumpTo: partial });
  let summary: Omit<CachedScenario, "stateBytes" | "generatedSeconds">;
  try {
    const client = createDevnetClient(node.rpcUrl);
    const deployment = await deployDevnet(client);
    const scenario = await Scenario.prepare(client, deployment, {
      seed: spec.seed,
      wallets: spec.wallets,
    });
    progress(`prepared ${spec.wallets} wallets in ${seconds(started)} s`);
    let lastLine = performance.now();
    const result = await scenario.run({
      events: spec.events,
      onBlock: (step) => {
        if (performance.now() - lastLine < 10_000) return;
        lastLine = performance.now();
        progress(`${step.stakerEvents}/${step.targetEvents} events, ${seconds(started)} s`);
      },
    });
    summary = {
      ...spec,
      deployment,
      head: result.block,
      stakerEvents: result.stakerEvents,
      transactions: result.transactions,
      citizensStaked: scenario.citizensStaked,
      stateFile: files.state,
    };
  } finally {
    await node.stop();
  }
  const generatedSeconds = Number(seconds(started));
  await rename(partial, files.state);
  const stateBytes = (await stat(files.state)).size;
  const { deployment, head, ...rest } = summary;
  const record: RecordJson = { ...rest, head: head.toString(), generatedSeconds, stateBytes };
  await writeFile(
    files.deployment,
    `${JSON.stringify({ ...deployment, deployBlock: Number(deployment.deployBlock) }, null, 2)}\n`,
  );
  await writeFile(files.record, `${JSON.stringify(record, null, 2)}\n`);
  progress(`generated in ${generatedSeconds} s, state ${(stateBytes / 1e6).toFixed(0)} MB`);
  return { ...summary, generatedSeconds, stateBytes };
}

function seconds(since: number): string {
  return ((performance.now() - since) / 1000).toFixed(1);
}

export type LoadedScenario = {
  scenario: CachedScenario;
  node: Awaited<ReturnType<typeof startStatefulAnvil>>;
  /** Whether this call generated the cache (false: it was already there). */
  generated: boolean;
  loadSeconds: number;
};

/** An anvil holding the scenario's chain, from the cache when present, generated otherwise. */
export async function loadScenario(
  spec: ScenarioSpec,
  progress: (line: string) => void = () => {},
): Promise<LoadedScenario> {
  let scenario = await readRecord(spec);
  const generated = scenario === undefined;
  if (!scenario) {
    progress(`no cached scenario ${spec.seed}-${spec.events}; generating it (once)`);
    scenario = await generate(spec, progress);
  }
  const started = performance.now();
  const node = await startStatefulAnvil({ loadFrom: scenario.stateFile });
  const loadSeconds = Number(seconds(started));
  const head = await createDevnetClient(node.rpcUrl).getBlockNumber();
  if (head !== scenario.head) {
    await node.stop();
    throw new ScenarioCacheInvalid(
      `${scenario.stateFile} loads to head ${head}, the record says ${scenario.head}; delete it`,
    );
  }
  // The deployment records the node that generated it; point it at the one serving now.
  scenario = { ...scenario, deployment: { ...scenario.deployment, rpcUrl: node.rpcUrl } };
  progress(`scenario loaded in ${loadSeconds} s (head ${head})`);
  return { scenario, node, generated, loadSeconds };
}
