/**
 * Blocks shaped like mainnet's for the sparse chain's tail: each holds ~150 transactions whose
 * receipts carry other contracts' logs (none of the staker's), with a receiptsRoot that matches
 * them, and a logsBloom with a chosen share of its 2,048 bits set. The bloom's fill is what
 * decides how often a block admits the staker by chance (a false positive the follower settles
 * by the block's receipts): a real June 2024 block of 13.9M gas has 906 bits set (0.44); blocks
 * fill more as the gas limit grows. Random bits stand in for the logs' own: what the check
 * reads from a bloom is only which bits are set.
 */
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { concatHex, type Hex, numberToHex } from "viem";
import { SeededRandom } from "../../devnet/random.ts";
import { receiptsRoot } from "../../indexer/chain/block-receipts.ts";

const TRANSACTIONS = 150;
const BLOOM_BITS = 2048;

/** Receipts roots already computed, one file each, named by what decides them. */
const ROOTS_DIR = join(homedir(), ".cache", "citizen-staking", "receipts-roots");
const ROOT = join(import.meta.dir, "..", "..");
/** What decides a root besides the receipts: the trie code and the packages it builds on. */
const ROOT_CODE = ["indexer/chain/block-receipts.ts", "bun.lock"];

export interface BusyBlock {
  receipts: Record<string, unknown>[];
  receiptsRoot: Hex;
  transactions: Hex[];
  /** The bloom at each fill asked for, by fill. */
  blooms: Map<number, Hex>;
}

/**
 * A 32-byte word standing for a hash. Nothing reads these words as keccak images (addresses,
 * topics, transaction hashes of other contracts' activity), and Bun's native SHA-256 is a
 * hundred times faster than keccak in JavaScript: 100 blocks of 150 transactions take ~4k words
 * each.
 */
function hashWord(data: Hex): Hex {
  return `0x${new Bun.CryptoHasher("sha256").update(data).digest("hex")}`;
}

let rootCode: Promise<string> | undefined;

/**
 * The receipts' trie root, kept on disk by a hash of the receipts and of ROOT_CODE. Building the
 * trie is most of a busy block's cost (~0.1 s each on a quiet machine; the mainnet bench's tail
 * has 100), and the blocks are the same on every run of a seed.
 */
async function keptReceiptsRoot(receipts: Record<string, unknown>[]): Promise<Hex> {
  rootCode ??= Promise.all(ROOT_CODE.map((file) => readFile(join(ROOT, file), "utf8"))).then(
    (texts) => new Bun.CryptoHasher("sha256").update(texts.join("\0")).digest("hex"),
  );
  const key = new Bun.CryptoHasher("sha256")
    .update(await rootCode)
    .update(JSON.stringify(receipts))
    .digest("hex");
  const file = join(ROOTS_DIR, key);
  if (existsSync(file)) return (await readFile(file, "utf8")) as Hex;
  const root = await receiptsRoot(receipts as unknown as Parameters<typeof receiptsRoot>[0]);
  await mkdir(ROOTS_DIR, { recursive: true });
  // Written whole under a name of its own, then renamed: a reader never sees half a root.
  const partial = `${file}.${process.pid}`;
  await writeFile(partial, root);
  await rename(partial, file);
  return root;
}

/** A random bloom with `fill` of its bits set. */
export function bloomWithFill(fill: number, random: SeededRandom): Hex {
  const bytes = new Uint8Array(BLOOM_BITS / 8);
  const set = new Set<number>();
  const wanted = Math.round(fill * BLOOM_BITS);
  while (set.size < wanted) set.add(random.int(0, BLOOM_BITS - 1));
  for (const bit of set) bytes[bit >> 3]! |= 1 << (bit & 7);
  return `0x${Buffer.from(bytes).toString("hex")}` as Hex;
}

/** Block `number`'s transactions and receipts (seeded by the number), and its blooms. */
export async function busyBlock(
  number: bigint,
  fills: readonly number[],
  seed: string,
): Promise<BusyBlock> {
  const random = new SeededRandom(`${seed}-${number}`);
  const word = () => hashWord(numberToHex(random.int(0, 2 ** 31)));
  const receipts: Record<string, unknown>[] = [];
  const transactions: Hex[] = [];
  let gas = 0n;
  for (let index = 0; index < TRANSACTIONS; index++) {
    const hash = hashWord(concatHex([numberToHex(number, { size: 32 }), numberToHex(index)]));
    transactions.push(hash);
    gas += 21_000n + BigInt(random.int(0, 200_000));
    const logs = Array.from({ length: random.int(0, 6) }, (_, i) => ({
      address: `0x${word().slice(26)}`,
      topics: [word(), word(), word()],
      data: concatHex([word(), word()]),
      logIndex: numberToHex(i),
      transactionHash: hash,
      transactionIndex: numberToHex(index),
      removed: false,
    }));
    receipts.push({
      type: "0x2",
      status: "0x1",
      cumulativeGasUsed: numberToHex(gas),
      logsBloom: bloomWithFill(0.01 * logs.length, random),
      logs,
      transactionHash: hash,
      transactionIndex: numberToHex(index),
      gasUsed: "0x5208",
      from: `0x${word().slice(26)}`,
      to: `0x${word().slice(26)}`,
      contractAddress: null,
      effectiveGasPrice: "0x3b9aca00",
    });
  }
  const root = await keptReceiptsRoot(receipts);
  const blooms = new Map(fills.map((fill) => [fill, bloomWithFill(fill, random)]));
  return { receipts, receiptsRoot: root, transactions, blooms };
}
