import { describe, expect, test } from "bun:test";
import { Kind } from "@sinclair/typebox";
import { t } from "elysia";
import { jsonWriter, RecordSourcesMismatch } from "../../api/modules/citizens/json-writer.ts";

/** The record writer's compiler: the schema decides the members, the sources their values. */
const Shape = t.Object({
  id: t.String({ pattern: "^[0-9]+$" }),
  kind: t.Literal("s1"),
  label: t.Optional(t.String()),
  count: t.Number(),
  // A uint256 as model.ts declares one: a bigint written with its exact digits.
  big: t.Unsafe<bigint>({ [Kind]: "Integer", type: "integer" }),
  nested: t.Object({ flag: t.Boolean(), tags: t.Optional(t.Array(t.String())) }),
});

interface Input {
  id: number;
  label?: string;
  tags?: string[];
}

describe("jsonWriter", () => {
  const write = jsonWriter<typeof Shape, Input, null>(Shape, {
    id: (input) => String(input.id),
    label: (input) => input.label,
    count: (input) => input.id / 4,
    big: (input) => BigInt(input.id) * 10n ** 20n,
    nested: { flag: (input) => input.id > 1, tags: (input) => input.tags },
  });

  test("writes the schema's members in its order, leaving out undefined optional ones", () => {
    expect(write({ id: 1 }, null)).toBe(
      '{"id":"1","kind":"s1","count":0.25,"big":100000000000000000000,"nested":{"flag":false}}',
    );
    const full = write({ id: 2, label: 'a "quoted" label', tags: ["x"] }, null);
    expect(JSON.parse(full)).toEqual({
      id: "2",
      kind: "s1",
      label: 'a "quoted" label',
      count: 0.5,
      big: 200000000000000000000,
      nested: { flag: true, tags: ["x"] },
    });
  });

  test("refuses a member without a source, and a source for no member", () => {
    const sources = {
      id: () => "1",
      label: () => undefined,
      count: () => 1,
      big: () => 1n,
      nested: { flag: () => true, tags: () => undefined },
    };
    const { count: _count, ...missing } = sources;
    expect(() => jsonWriter(Shape, missing as never)).toThrow(RecordSourcesMismatch);
    expect(() => jsonWriter(Shape, { ...sources, extra: () => 1 } as never)).toThrow(
      /sources for no member of the schema: extra/,
    );
    expect(() => jsonWriter(Shape, { ...sources, nested: { flag: () => true } } as never)).toThrow(
      /no source for nested.tags/,
    );
  });
});
