/**
 * Staker logs to events by slicing: every argument of the followed events is one 32-byte word (an
 * address or a uint256), so each event's layout, derived once from the ABI, says where each
 * argument sits. What it earns (`bun bench/log-decoder.ts`: the 4,002 staker logs of a seeded
 * 4,000-event scenario chain, every decoder's events checked equal first; five runs on a 2-core
 * VM at load 10-11): 1.7-3.5 µs a log (280k-600k logs/s), against 17-44 µs (23k-58k logs/s) for
 * viem's decodeEventLog or parseEventLogs, which also leave addresses checksummed: 10-14x faster,
 * 15-40 µs saved of the 60 µs of worker CPU an event may take (docs/performance.md, Backfill).
 * test/unit/staker-log-decoder.test.ts holds its results equal to viem's decodeEventLog.
 */
import type { AbiEvent, DecodeEventLogReturnType, Hex } from "viem";
import type { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import {
  STAKER_EVENT_ABIS,
  STAKER_EVENTS,
  STAKER_TOPICS,
  type StakerEventName,
} from "../../contracts/staker-events.ts";

export { STAKER_EVENTS, STAKER_TOPICS };

/** A followed staker event with its arguments; addresses come back lowercased. */
export type DecodedStakerEvent = DecodeEventLogReturnType<
  typeof stakerAbi,
  StakerEventName,
  Hex[],
  Hex,
  true
>;

/** A log under a staker topic whose topics or data do not have the event's shape. */
export class MalformedStakerLog extends Error {
  override name = "MalformedStakerLog";
}

/** Where one argument sits: an indexed one in a topic, the others in a 32-byte data word. */
interface Word {
  name: string;
  kind: "address" | "uint256";
  in: "topics" | "data";
  index: number;
}

interface Layout {
  eventName: StakerEventName;
  topicCount: number;
  dataLength: number;
  words: Word[];
}

/**
 * Each followed event's layout, derived from the staker ABI. An ABI change to a dynamic or other
 * type fails here, at load, rather than decoding wrongly.
 */
function layoutOf(event: AbiEvent, eventName: StakerEventName): Layout {
  let topics = 0;
  let dataWords = 0;
  const words = event.inputs.map(({ name, type, indexed }): Word => {
    if (!name || (type !== "address" && type !== "uint256")) {
      throw new Error(`${eventName}.${name} is ${type}: not a named single-word argument`);
    }
    return indexed
      ? { name, kind: type, in: "topics", index: 1 + topics++ }
      : { name, kind: type, in: "data", index: dataWords++ };
  });
  return { eventName, topicCount: 1 + topics, dataLength: 2 + 64 * dataWords, words };
}

const layouts = new Map<string, Layout>(
  STAKER_EVENTS.map((name, index) => [
    STAKER_TOPICS[index]!,
    layoutOf(STAKER_EVENT_ABIS[index]!, name),
  ]),
);

export function decodeStakerEvent(topics: readonly Hex[], data: Hex): DecodedStakerEvent {
  const layout = layouts.get(topics[0]?.toLowerCase() ?? "");
  if (!layout) throw new MalformedStakerLog(`topic ${topics[0]} is not a followed staker event`);
  if (topics.length !== layout.topicCount || data.length !== layout.dataLength) {
    throw new MalformedStakerLog(
      `a ${layout.eventName} log has ${topics.length} topics and ${(data.length - 2) / 2} data bytes; the ABI says ${layout.topicCount} and ${(layout.dataLength - 2) / 2}`,
    );
  }
  const args: Record<string, unknown> = {};
  for (const word of layout.words) {
    const hex =
      word.in === "topics"
        ? topics[word.index]!.slice(2)
        : data.slice(2 + 64 * word.index, 66 + 64 * word.index);
    args[word.name] =
      word.kind === "address" ? `0x${hex.slice(24).toLowerCase()}` : BigInt(`0x${hex}`);
  }
  return { eventName: layout.eventName, args } as DecodedStakerEvent;
}
