/**
 * A JSON-RPC proxy that answers wrongly the way a provider's load balancer can, each lie chosen
 * by the test: an eth_getLogs answer that leaves out one block's logs (a node behind that block,
 * a branch that flipped away and back), or every answer that does (a node whose log index lost
 * them), eth_getBlockReceipts answers that leave them out too or are refused, headers whose
 * bloom admits everything (a mainnet bloom's false positives), and eth_calls at a block number
 * answered from another block's state (a node still building the block, a node at another
 * height), and a node behind the chain (alone, or as one backend of a load-balanced pair)
 * answering as a lagging geth does. It only rewrites what it is told to, and counts what it saw, so a test can tell a lie
 * was told and how the indexer named its blocks.
 */
import { SeededRandom } from "../../devnet/random.ts";

/** A JSON-RPC error object, as a node puts it in its answer. */
export type RpcErrorAnswer = { code: number; message: string };

type RpcCall = { jsonrpc: "2.0"; id: number; method: string; params?: unknown[] };
type RpcAnswer = { jsonrpc: "2.0"; id: number; result?: unknown; error?: RpcErrorAnswer };
type RpcLog = { address: string; blockNumber: string; logIndex: string };
type RpcReceipt = { blockNumber: string; logs: RpcLog[] };

const FULL_BLOOM = `0x${"ff".repeat(256)}`;

/** Where an eth_call or eth_getCode names its block, by position in the params. */
const BLOCK_PARAM: Record<string, number> = { eth_call: 1, eth_getCode: 1 };

/** Reads of state at a block, and where each names its block. */
const STATE_READS: Record<string, number> = {
  ...BLOCK_PARAM,
  eth_getBalance: 1,
  eth_getStorageAt: 2,
  eth_getTransactionCount: 1,
};

/**
 * How a node behind answers eth_getLogs over blocks past its head: geth since 1.15.9 and reth
 * refuse the range (-32602 "block range extends beyond current head block"); older geth and some
 * clients answer the blocks they have, leaving the rest out without a word.
 */
export type LogsPastHead = "refused" | "left out";

/** A node behind the upstream one, and how many of the requests it answers. */
export interface Lag {
  /** `blocks` below the upstream head, or a `head` held where it is (never above upstream's). */
  behind: { blocks: number } | { head: bigint };
  /** Share of HTTP requests it answers, the rest going straight upstream: 1 is a lone node. */
  share: number;
  logsPastHead: LogsPastHead;
}

const hex = (value: bigint) => `0x${value.toString(16)}`;

/** The head a node `lag` behind serves while upstream's is `real`. */
function servedHead(lag: Lag, real: bigint): bigint {
  if ("head" in lag.behind) return lag.behind.head < real ? lag.behind.head : real;
  const blocks = BigInt(lag.behind.blocks);
  return real > blocks ? real - blocks : 0n;
}

export function startLyingNode(upstream: string) {
  /**
   * Blocks whose logs the next eth_getLogs range answer holding them leaves out, once each: only
   * in answers to queries for `address`'s logs, only the log at `logIndex`, when given.
   */
  const dropOnce = new Map<bigint, { address?: string; logIndex?: number }>();
  /** Blocks whose logs of `address` every eth_getLogs answer leaves out, by range or by hash. */
  const hidden = new Map<bigint, string>();
  /** Blocks whose receipts leave out the hidden logs too (their root no longer matches). */
  const tampered = new Set<bigint>();
  let refuseReceipts = false;
  let fullBlooms = false;
  let callShift: "next-block" | "latest" | undefined;
  let refuseBlockHash: { error: RpcErrorAnswer; left: number } | undefined;
  let ignoreBlockHash = false;
  let lag: Lag | undefined;
  let lateHeadReads: { publishMs: number } | undefined;
  /** The window in which the next block's state is out but the old head is still served. */
  let unpublished: { head: bigint; next: bigint; until: number } | undefined;
  const random = new SeededRandom("lagging");
  const counts = {
    droppedLogs: 0,
    /** eth_calls and eth_getCodes by how they named their block. */
    byNumber: 0,
    byHash: 0,
    byTag: 0,
    /** Reads answered from another block's state than the one they named. */
    shiftedReads: 0,
    refusedBlockHashes: 0,
    /** Calls the node behind answered about blocks it lacked. */
    lackedBlocks: 0,
    /** HTTP requests holding eth_calls at the head, waiting for the next block now. */
    heldHeadReads: 0,
    /** eth_calls at the head held until the next block, then answered from its state. */
    lateHeadReads: 0,
    /** eth_getBlockReceipts calls answered (as they are, tampered, or refused). */
    blockReceipts: 0,
  };

  const send = async (calls: RpcCall[]): Promise<RpcAnswer[]> => {
    if (calls.length === 0) return [];
    const response = await fetch(upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(calls),
    });
    return (await response.json()) as RpcAnswer[];
  };

  /** The call as forwarded, or the error the node is made to answer with. */
  const rewrite = (call: RpcCall): RpcCall | RpcErrorAnswer => {
    const at = BLOCK_PARAM[call.method];
    if (at === undefined || !call.params) return call;
    const block = call.params[at];
    if (typeof block === "object" && block !== null) {
      counts.byHash++;
      if (refuseBlockHash && refuseBlockHash.left-- > 0) {
        counts.refusedBlockHashes++;
        return refuseBlockHash.error;
      }
      if (!ignoreBlockHash) return call;
      counts.shiftedReads++;
      const params = [...call.params];
      params[at] = "latest";
      return { ...call, params };
    }
    if (typeof block !== "string" || !block.startsWith("0x")) {
      counts.byTag++;
      return call;
    }
    counts.byNumber++;
    if (callShift === undefined || call.method !== "eth_call") return call;
    counts.shiftedReads++;
    const params = [...call.params];
    params[at] = callShift === "latest" ? "latest" : `0x${(BigInt(block) + 1n).toString(16)}`;
    return { ...call, params };
  };

  const dropLogs = (call: RpcCall, answer: RpcAnswer): RpcAnswer => {
    const filter = call.params?.[0] as { fromBlock?: string; address?: unknown } | undefined;
    if (call.method !== "eth_getLogs" || !Array.isArray(answer.result)) return answer;
    const address = String(filter?.address).toLowerCase();
    // A hidden block is left out of every answer; a dropped one only out of range queries (a
    // query by block hash is the indexer asking that block again).
    const lies = (log: RpcLog) => {
      if (hidden.get(BigInt(log.blockNumber)) === address) return true;
      const drop = dropOnce.get(BigInt(log.blockNumber));
      if (drop === undefined || !filter?.fromBlock) return false;
      if (drop.address !== undefined && address !== drop.address) return false;
      return drop.logIndex === undefined || Number(log.logIndex) === drop.logIndex;
    };
    const logs = answer.result as RpcLog[];
    const dropped = logs.filter(lies);
    if (dropped.length === 0) return answer;
    const kept = logs.filter((log) => !dropped.includes(log));
    for (const log of dropped) if (filter?.fromBlock) dropOnce.delete(BigInt(log.blockNumber));
    counts.droppedLogs += logs.length - kept.length;
    return { ...answer, result: kept };
  };

  /** Receipts and headers as the test's lies have them. */
  const rewriteAnswer = (call: RpcCall, answer: RpcAnswer): RpcAnswer => {
    if (call.method === "eth_getBlockReceipts" && Array.isArray(answer.result)) {
      const receipts = answer.result as RpcReceipt[];
      const block = receipts[0] ? BigInt(receipts[0].blockNumber) : undefined;
      const address = block === undefined ? undefined : hidden.get(block);
      if (block === undefined || address === undefined || !tampered.has(block)) return answer;
      const logs = (receipt: RpcReceipt) =>
        receipt.logs.filter((log) => log.address.toLowerCase() !== address);
      return {
        ...answer,
        result: receipts.map((receipt) => ({ ...receipt, logs: logs(receipt) })),
      };
    }
    const header = answer.result as { logsBloom?: string } | null | undefined;
    if (fullBlooms && call.method.startsWith("eth_getBlockBy") && header?.logsBloom) {
      return { ...answer, result: { ...header, logsBloom: FULL_BLOOM } };
    }
    return answer;
  };

  const answer = async (calls: RpcCall[]): Promise<RpcAnswer[]> => {
    const rewritten = calls.map((call) => {
      if (call.method !== "eth_getBlockReceipts") return rewrite(call);
      counts.blockReceipts++;
      return refuseReceipts
        ? {
            code: -32601,
            message: "the method eth_getBlockReceipts does not exist/is not available",
          }
        : call;
    });
    const forwarded = calls
      .map((call, i) => ({ call, sent: rewritten[i]! }))
      .filter((each): each is { call: RpcCall; sent: RpcCall } => "method" in each.sent);
    const answers = await send(forwarded.map((each) => each.sent));
    const byId = new Map(answers.map((each) => [each.id, each]));
    return calls.map((call, i) => {
      const sent = rewritten[i]!;
      if (!("method" in sent)) return { jsonrpc: "2.0", id: call.id, error: sent };
      return rewriteAnswer(call, dropLogs(call, byId.get(call.id)!));
    });
  };

  const upstreamHead = async () => {
    const [head] = await send([{ jsonrpc: "2.0", id: 0, method: "eth_blockNumber" }]);
    return BigInt(head!.result as string);
  };

  /** The numbers of the blocks these hashes name (undefined: upstream has none such). */
  const numbersOf = async (hashes: string[]) => {
    const unique = [...new Set(hashes)];
    const blocks = await send(
      unique.map((hash, i) => ({
        jsonrpc: "2.0" as const,
        id: i,
        method: "eth_getBlockByHash",
        params: [hash, false],
      })),
    );
    const byId = new Map(blocks.map((each) => [each.id, each.result as { number: string } | null]));
    return new Map(
      unique.map((hash, i) => {
        const block = byId.get(i);
        return [hash.toLowerCase(), block ? BigInt(block.number) : undefined];
      }),
    );
  };

  /**
   * The answers of a geth node whose head is `lag` behind upstream's: its head for "latest",
   * null for a block, receipt or transaction it lacks, "header not found" for a state read past
   * its head ("header for hash not found" by hash), "unknown block" for logs by a hash it lacks,
   * and eth_getLogs past its head refused or cut short (`logsPastHead`). The rest goes upstream.
   */
  const answerBehind = async (calls: RpcCall[], behind: Lag): Promise<RpcAnswer[]> => {
    const head = servedHead(behind, await upstreamHead());
    const named: string[] = [];
    const nameOf = (block: unknown) => {
      if (typeof block === "object" && block !== null && "blockHash" in block) {
        named.push(String(block.blockHash));
      }
    };
    for (const call of calls) {
      const at = STATE_READS[call.method];
      if (at !== undefined) nameOf(call.params?.[at]);
      if (call.method === "eth_getBlockByHash") named.push(String(call.params?.[0]));
      if (call.method === "eth_getLogs") nameOf(call.params?.[0]);
    }
    const numbers = named.length > 0 ? await numbersOf(named) : new Map<string, bigint>();
    /** A block parameter as a number (its own, its hash's, or its tag's on this node). */
    const resolve = (block: unknown): bigint | undefined => {
      if (typeof block === "object" && block !== null) {
        if ("blockHash" in block) return numbers.get(String(block.blockHash).toLowerCase());
        if ("blockNumber" in block) return BigInt(String(block.blockNumber));
      }
      if (typeof block === "string" && block.startsWith("0x")) return BigInt(block);
      if (block === "earliest") return 0n;
      // The finality tags sit as far below this node's head as below upstream's.
      if (block === "finalized" || block === "safe") return head > 64n ? head - 64n : 0n;
      return head;
    };
    const lacked = (id: number, answer: { result: null | [] } | { error: RpcErrorAnswer }) => {
      counts.lackedBlocks++;
      return { jsonrpc: "2.0" as const, id, ...answer };
    };
    type Plan =
      | { answer: RpcAnswer }
      | { forward: RpcCall; after?: (answer: RpcAnswer) => RpcAnswer };
    const plans = calls.map((call): Plan => {
      const params = call.params ?? [];
      const at = STATE_READS[call.method];
      if (call.method === "eth_blockNumber") {
        return { answer: { jsonrpc: "2.0", id: call.id, result: hex(head) } };
      }
      if (at !== undefined) {
        const block = params[at];
        const number = resolve(block);
        if (number === undefined) return { forward: call };
        if (number > head) {
          const byHash = typeof block === "object" && block !== null && "blockHash" in block;
          const message = byHash ? "header for hash not found" : "header not found";
          return { answer: lacked(call.id, { error: { code: -32000, message } }) };
        }
        const rewritten = [...params];
        if (typeof block === "string" && !block.startsWith("0x")) rewritten[at] = hex(number);
        return { forward: { ...call, params: rewritten } };
      }
      if (call.method === "eth_getBlockByNumber" || call.method === "eth_getBlockByHash") {
        const number =
          call.method === "eth_getBlockByHash"
            ? numbers.get(String(params[0]).toLowerCase())
            : resolve(params[0]);
        if (number !== undefined && number > head)
          return { answer: lacked(call.id, { result: null }) };
        if (call.method === "eth_getBlockByHash" || number === undefined) return { forward: call };
        return { forward: { ...call, params: [hex(number), ...params.slice(1)] } };
      }
      if (call.method === "eth_getLogs") {
        const filter = (params[0] ?? {}) as Record<string, unknown>;
        if (filter.blockHash !== undefined) {
          const number = numbers.get(String(filter.blockHash).toLowerCase());
          if (number !== undefined && number > head) {
            return {
              answer: lacked(call.id, { error: { code: -32000, message: "unknown block" } }),
            };
          }
          return { forward: call };
        }
        const from = resolve(filter.fromBlock ?? "latest")!;
        const to = resolve(filter.toBlock ?? "latest")!;
        if (to > head && behind.logsPastHead === "refused") {
          const message = "block range extends beyond current head block";
          return { answer: lacked(call.id, { error: { code: -32602, message } }) };
        }
        if (from > head) return { answer: lacked(call.id, { result: [] }) };
        const cut = to > head;
        if (cut) counts.lackedBlocks++;
        const clamped = { ...filter, fromBlock: hex(from), toBlock: hex(cut ? head : to) };
        return { forward: { ...call, params: [clamped] } };
      }
      if (
        call.method === "eth_getTransactionReceipt" ||
        call.method === "eth_getTransactionByHash"
      ) {
        return {
          forward: call,
          after: (answer) => {
            const found = answer.result as { blockNumber?: string } | null | undefined;
            if (!found?.blockNumber || BigInt(found.blockNumber) <= head) return answer;
            return lacked(call.id, { result: null });
          },
        };
      }
      return { forward: call };
    });
    const forwarded = plans.flatMap((plan) => ("forward" in plan ? [plan.forward] : []));
    const byId = new Map((await send(forwarded)).map((each) => [each.id, each]));
    return plans.map((plan) => {
      if ("answer" in plan) return plan.answer;
      const answer = byId.get(plan.forward.id)!;
      return plan.after ? plan.after(answer) : answer;
    });
  };

  /**
   * eth_calls at the upstream head wait until a next block is there and are answered from its
   * state, as anvil answers a read at its head while it mines the next block (by number and by
   * hash alike: it looks the hash's number up, and the head's state is the one being changed).
   * For `publishMs` after that the old head is still the one served (eth_blockNumber, "latest")
   * and reads at it still get the new state: anvil publishes a mined block's state before its
   * number, and a loaded machine can hold the two apart for a while.
   */
  const answerHeadReadsLate = async (calls: RpcCall[]): Promise<RpcCall[]> => {
    const window = unpublished && performance.now() < unpublished.until ? unpublished : undefined;
    const reads = calls.filter((call) => call.method === "eth_call");
    const head = window?.head ?? (reads.length > 0 ? await upstreamHead() : 0n);
    const hashes = reads.flatMap((call) => {
      const block = call.params?.[BLOCK_PARAM.eth_call!];
      return typeof block === "object" && block !== null && "blockHash" in block
        ? [String(block.blockHash)]
        : [];
    });
    const numbers = hashes.length > 0 ? await numbersOf(hashes) : new Map<string, bigint>();
    const atHead = (call: RpcCall) => {
      if (call.method !== "eth_call") return false;
      const block = call.params?.[BLOCK_PARAM.eth_call!];
      if (typeof block === "object" && block !== null && "blockHash" in block) {
        return numbers.get(String(block.blockHash).toLowerCase()) === head;
      }
      return typeof block === "string" && block.startsWith("0x") && BigInt(block) === head;
    };
    let next = window?.next ?? head;
    if (!window && calls.some(atHead)) {
      counts.heldHeadReads++;
      while (next === head) {
        await Bun.sleep(20);
        next = await upstreamHead();
      }
      counts.heldHeadReads--;
      unpublished = { head, next, until: performance.now() + (lateHeadReads?.publishMs ?? 0) };
    }
    const served = unpublished && performance.now() < unpublished.until ? unpublished : undefined;
    return calls.map((call) => {
      if (served && call.method === "eth_getBlockByNumber" && call.params?.[0] === "latest") {
        return { ...call, params: [hex(served.head), ...call.params.slice(1)] };
      }
      if (!atHead(call) || next === head) return call;
      counts.lateHeadReads++;
      const params = [...(call.params ?? [])];
      params[BLOCK_PARAM.eth_call!] = hex(next);
      return { ...call, params };
    });
  };

  /** eth_blockNumber answered with the head still served while a mined block is unpublished. */
  const withUnpublishedHead = (calls: RpcCall[], answers: RpcAnswer[]): RpcAnswer[] => {
    const served = unpublished && performance.now() < unpublished.until ? unpublished : undefined;
    if (!served) return answers;
    return answers.map((answer, i) =>
      calls[i]?.method === "eth_blockNumber" ? { ...answer, result: hex(served.head) } : answer,
    );
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const parsed = (await request.json()) as RpcCall | RpcCall[];
      // One node answers a whole HTTP request, as a load balancer routes it.
      const behind = lag && random.chance(lag.share) ? lag : undefined;
      const calls = lateHeadReads ? await answerHeadReadsLate([parsed].flat()) : [parsed].flat();
      const answered = behind ? await answerBehind(calls, behind) : await answer(calls);
      const answers = lateHeadReads ? withUnpublishedHead(calls, answered) : answered;
      return Response.json(Array.isArray(parsed) ? answers : answers[0]);
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    counts,
    /**
     * The next eth_getLogs range answer holding `block`'s logs leaves them all out; with
     * `address`, only an answer to a query for that one address's logs; with `logIndex`, only
     * that one log (the block's others are kept).
     */
    dropLogsOnce(block: bigint, only: { address?: string; logIndex?: number } = {}) {
      dropOnce.set(block, { ...only, address: only.address?.toLowerCase() });
    },
    /**
     * Every eth_getLogs answer for `address`'s logs leaves out `block`'s, by range and by hash;
     * with `receipts`, its eth_getBlockReceipts answer leaves them out too. `unhide` ends it.
     */
    hideLogs(block: bigint, address: string, { receipts = false } = {}) {
      hidden.set(block, address.toLowerCase());
      if (receipts) tampered.add(block);
    },
    /** The block's receipts are answered as they are again (its logs stay hidden). */
    stopTamperingReceipts(block: bigint) {
      tampered.delete(block);
    },
    /** eth_getBlockReceipts is answered as a node without the method answers it. */
    refuseBlockReceipts(refuse = true) {
      refuseReceipts = refuse;
    },
    /** Every header's logsBloom admits every address and topic (all 2,048 bits set). */
    fillBlooms() {
      fullBlooms = true;
    },
    /** eth_calls at a block number are answered at the next block's number, or at `latest`. */
    shiftCallsByNumber(shift: "next-block" | "latest" | undefined) {
      callShift = shift;
    },
    /**
     * The next `times` eth_calls and eth_getCodes naming their block by hash get this error: as a
     * node without EIP-1898 (invalid params), or one that lacks the block (resource not found).
     */
    refuseBlockHashes(error: RpcErrorAnswer, times = Number.POSITIVE_INFINITY) {
      refuseBlockHash = { error, left: times };
    },
    /** eth_calls and eth_getCodes naming their block by hash are answered at `latest`. */
    ignoreBlockHashes() {
      ignoreBlockHash = true;
    },
    /**
     * From now on a node behind the chain answers `share` of the requests (all of them by
     * default: a lone node); the others go straight upstream, as to a load balancer's other
     * backend. Undefined: every request goes upstream again.
     */
    lagBehind(behind: (Partial<Lag> & Pick<Lag, "behind">) | undefined) {
      lag = behind && { share: 1, logsPastHead: "refused", ...behind };
    },
    /**
     * eth_calls at the head are answered from the next block's state, once it is there; for
     * `publishMs` after that the old head is still served and reads at it still get the new
     * state. `false` ends it.
     */
    answerHeadReadsLate(late: false | { publishMs?: number } = {}) {
      lateHeadReads = late ? { publishMs: late.publishMs ?? 0 } : undefined;
      unpublished = undefined;
    },
    stop: () => server.stop(true),
  };
}
