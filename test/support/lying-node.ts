/**
 * A JSON-RPC proxy that answers wrongly the way a provider's load balancer can, each lie chosen
 * by the test: an eth_getLogs answer that leaves out one block's logs (a node behind that block,
 * a branch that flipped away and back), or every answer that does (a node whose log index lost
 * them), eth_getBlockReceipts answers that leave them out too or are refused, headers whose
 * bloom admits everything (a mainnet bloom's false positives), and eth_calls at a block number
 * answered from another block's state (a node still building the block, a node at another
 * height). It only rewrites what it is told to, and counts what it saw, so a test can tell a lie
 * was told and how the indexer named its blocks.
 */

/** A JSON-RPC error object, as a node puts it in its answer. */
export type RpcErrorAnswer = { code: number; message: string };

type RpcCall = { jsonrpc: "2.0"; id: number; method: string; params?: unknown[] };
type RpcAnswer = { jsonrpc: "2.0"; id: number; result?: unknown; error?: RpcErrorAnswer };
type RpcLog = { address: string; blockNumber: string; logIndex: string };
type RpcReceipt = { blockNumber: string; logs: RpcLog[] };

const FULL_BLOOM = `0x${"ff".repeat(256)}`;

/** Where an eth_call or eth_getCode names its block, by position in the params. */
const BLOCK_PARAM: Record<string, number> = { eth_call: 1, eth_getCode: 1 };

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
  const counts = {
    droppedLogs: 0,
    /** eth_calls and eth_getCodes by how they named their block. */
    byNumber: 0,
    byHash: 0,
    byTag: 0,
    /** Reads answered from another block's state than the one they named. */
    shiftedReads: 0,
    refusedBlockHashes: 0,
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

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const parsed = (await request.json()) as RpcCall | RpcCall[];
      const answers = await answer([parsed].flat());
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
    stop: () => server.stop(true),
  };
}
