import { describe, expect, test } from "bun:test";
import {
  type AbiEvent,
  type Address,
  decodeEventLog,
  encodeAbiParameters,
  encodeEventTopics,
  type Hex,
} from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import {
  decodeStakerEvent,
  MalformedStakerLog,
  STAKER_EVENTS,
  STAKER_TOPICS,
} from "../../indexer/chain/staker-log-decoder.ts";

/** A deterministic spread of values: small, large, 2^256 - 1, and mixed-case addresses. */
function* samples(count: number) {
  let seed = 0x9e3779b97f4a7c15n;
  const next = () => {
    seed = (seed * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
    return seed;
  };
  for (let n = 0; n < count; n++) {
    const word = (next() << 192n) | (next() << 128n) | (next() << 64n) | next();
    yield {
      address: `0x${(word >> 96n).toString(16).padStart(40, "0")}` as Address,
      uint: n === 0 ? 0n : n === 1 ? (1n << 256n) - 1n : word >> BigInt(next() % 256n),
    };
  }
}

function encodeLog(
  eventName: (typeof STAKER_EVENTS)[number],
  values: { address: Address; uint: bigint },
) {
  const event = stakerAbi.find(
    (item): item is AbiEvent & typeof item => item.type === "event" && item.name === eventName,
  )!;
  const args = Object.fromEntries(
    event.inputs.map((input) => [
      input.name,
      input.type === "address" ? values.address : values.uint,
    ]),
  );
  const topics = encodeEventTopics({ abi: [event], args } as never) as Hex[];
  const dataInputs = event.inputs.filter((input) => !input.indexed);
  const data = encodeAbiParameters(
    dataInputs,
    dataInputs.map((input) => args[input.name!]) as never,
  );
  return { topics, data };
}

describe("staker log decoder", () => {
  test.each([...STAKER_EVENTS])(
    "%s decodes as viem does, with lowercase addresses",
    (eventName) => {
      for (const values of samples(200)) {
        const { topics, data } = encodeLog(eventName, values);
        const viem = decodeEventLog({
          abi: stakerAbi,
          topics: topics as [Hex],
          data,
          strict: true,
        });
        const lowered = Object.fromEntries(
          Object.entries(viem.args as Record<string, unknown>).map(([key, value]) => [
            key,
            typeof value === "string" ? value.toLowerCase() : value,
          ]),
        );
        expect(decodeStakerEvent(topics, data)).toEqual({ eventName, args: lowered } as never);
      }
    },
  );

  test("the filter topics are the three followed events' selectors", () => {
    expect(STAKER_TOPICS).toEqual(
      STAKER_EVENTS.map((name) => encodeEventTopics({ abi: stakerAbi, eventName: name })[0] as Hex),
    );
  });

  test("a log without the event's shape is a named error, not a wrong row", () => {
    const [values] = [...samples(1)];
    const { topics, data } = encodeLog("Stake", values!);
    expect(() => decodeStakerEvent(topics.slice(0, 2), data)).toThrow(MalformedStakerLog);
    expect(() => decodeStakerEvent(topics, `${data}00`)).toThrow(MalformedStakerLog);
    expect(() => decodeStakerEvent(topics, data.slice(0, -64) as Hex)).toThrow(MalformedStakerLog);
    const permit = encodeEventTopics({ abi: stakerAbi, eventName: "PermitUpdated" })[0] as Hex;
    expect(() => decodeStakerEvent([permit, ...topics.slice(1)], data)).toThrow(
      /not a followed staker event/,
    );
  });
});
