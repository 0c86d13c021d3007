import { BaseError, HttpRequestError, ResponseBodyTooLargeError } from "viem";
import { lacksBlock } from "./node-behind.ts";
import { isRateLimited } from "./rate-limits.ts";

/**
 * An eth_getLogs query the node refused as too large, and the span the node says would pass
 * when it says one (a suggested range, or its cap); without one the caller halves the range.
 */
export type RangeRefusal = { passingSpan?: bigint };

type Wording = {
  /** Who words it so (test/support/provider-wordings.ts records each with its source). */
  provider: string;
  pattern: RegExp;
  /** The span that would pass, from the words matched. */
  passingSpan?: (match: RegExpMatchArray) => bigint;
};

const count = (digits: string) => BigInt(digits.replace(/[,.]/g, ""));
const hexRange = (match: RegExpMatchArray) => BigInt(match[2]!) - BigInt(match[1]!) + 1n;
const decimalRange = (match: RegExpMatchArray) => BigInt(match[2]!) - BigInt(match[1]!) + 1n;
const cap = (match: RegExpMatchArray) => count(match[1]!);

/** Ordered: the wordings that name a passing span first, the bare ones after. */
const WORDINGS: readonly Wording[] = [
  {
    provider: "Alchemy",
    pattern: /this block range should work: \[(0x[0-9a-f]+),\s*(0x[0-9a-f]+)\]/i,
    passingSpan: hexRange,
  },
  {
    provider: "Infura",
    pattern: /try with this block range \[(0x[0-9a-f]+),\s*(0x[0-9a-f]+)\]/i,
    passingSpan: hexRange,
  },
  {
    provider: "reth",
    pattern: /retry with the range (\d+)-(\d+)/i,
    passingSpan: decimalRange,
  },
  { provider: "Infura", pattern: /range \d+ exceeds limit of ([\d,]+)/i, passingSpan: cap },
  { provider: "QuickNode", pattern: /limited to an? ([\d,.]+) (block )?range/i, passingSpan: cap },
  {
    provider: "Ankr",
    pattern: /maximum \[from, to\] blocks distance: ([\d,]+)/i,
    passingSpan: cap,
  },
  { provider: "PublicNode", pattern: /maximum block range: ([\d,]+)/i, passingSpan: cap },
  { provider: "Tenderly", pattern: /is bigger than range limit ([\d,]+)/i, passingSpan: cap },
  {
    provider: "erigon",
    pattern: /block range exceeds server limit, narrow your filter: ([\d,]+)/i,
    passingSpan: cap,
  },
  {
    provider: "cdk-erigon",
    pattern: /block range too large, max range: ([\d,]+)/i,
    passingSpan: cap,
  },
  { provider: "geth forks", pattern: /max block range = ([\d,]+)/i, passingSpan: cap },
  { provider: "Alchemy, Infura, zkEVM", pattern: /more than \d+ (results|logs)/i },
  { provider: "reth, LlamaRPC", pattern: /query exceeds max results/i },
  { provider: "erigon", pattern: /too many logs/i },
  { provider: "Alchemy", pattern: /log response size exceeded|query timeout exceeded/i },
  { provider: "Ankr", pattern: /block range is too wide/i },
  { provider: "Chainstack", pattern: /block range limit exceeded/i },
  { provider: "geth forks", pattern: /block range is (bigger|larger) than/i },
  // Wordings seen from other providers and forks: size, span and range caps in general terms.
  {
    provider: "others",
    pattern:
      /response size|too large|too big|block range|range (is )?too|exceeds? (the )?max|max(imum)? (block )?range|too many (logs|results|blocks)|limit exceeded|range limit|limited to .*range|exceed(s|ed)? .*(limit|range)/i,
  },
];

/**
 * EIP-1474's "limit exceeded", which Infura and others use for oversized log queries (and Infura
 * for its rate limits, told apart first).
 */
const LIMIT_EXCEEDED = -32005;

/**
 * Whether an eth_getLogs failure says the answer is or would be too large, so a smaller range
 * may pass, and the span that passes when the node names one: the transport's response cap
 * (ResponseBodyTooLargeError, 10 MiB, capped-answers.ts), HTTP 413, the "limit exceeded" code
 * -32005, and the providers' and clients' wordings (in the error's message or its data). Only consulted for
 * eth_getLogs answers, where a range is what the words are about. A rate limit is never one,
 * whatever its code or words ("exceeded", "limit"): a smaller range would be refused the same.
 */
export function readRangeRefusal(error: unknown): RangeRefusal | undefined {
  // "block range extends beyond current head block" is a node behind the range, not a size.
  if (!(error instanceof Error) || isRateLimited(error) || lacksBlock(error)) return undefined;
  const causes: unknown[] = [];
  if (error instanceof BaseError) {
    error.walk((cause) => {
      causes.push(cause);
      return false;
    });
  } else {
    causes.push(error);
  }
  const texts = causes.flatMap((cause) =>
    cause instanceof Error
      ? [
          cause.message,
          textOf((cause as { details?: unknown }).details),
          textOf((cause as { data?: unknown }).data),
        ]
      : [],
  );
  const words = texts.join(" ");
  for (const wording of WORDINGS) {
    const match = words.match(wording.pattern);
    if (!match) continue;
    const span = wording.passingSpan?.(match);
    return span !== undefined && span > 0n ? { passingSpan: span } : {};
  }
  const refusedByKind = causes.some(
    (cause) =>
      cause instanceof ResponseBodyTooLargeError ||
      (cause instanceof HttpRequestError && cause.status === 413) ||
      (cause as { code?: unknown })?.code === LIMIT_EXCEEDED,
  );
  return refusedByKind ? {} : undefined;
}

function textOf(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}
