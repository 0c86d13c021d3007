import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { S1Record, S2Record } from "../../api/modules/citizens/model.ts";

/**
 * docs/api-fields.md against the records' `t` schemas: the same fields, each with its JSON type
 * and whether every record carries it; and the errors table against the problems the code
 * defines. A field added to the schema without its line (or a line left for a removed field)
 * fails here.
 */
const ROOT = new URL("../../", import.meta.url);
const page = await Bun.file(new URL("docs/api-fields.md", ROOT)).text();

interface Field {
  type: string;
  required: boolean;
}

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
}

/** The leaves of a record schema by dotted path; a leaf is required when it and its parents are. */
function fieldsOf(schema: Schema, prefix = "", parentRequired = true): Map<string, Field> {
  const fields = new Map<string, Field>();
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    const path = `${prefix}${name}`;
    const required = parentRequired && (schema.required ?? []).includes(name);
    if (child.type === "object") {
      for (const [leaf, field] of fieldsOf(child, `${path}.`, required)) fields.set(leaf, field);
    } else {
      const type = child.type === "array" ? `array of ${child.items?.type}s` : String(child.type);
      fields.set(path, { type, required });
    }
  }
  return fields;
}

/** The rows of the first table under a `## heading` of the page, as trimmed cells. */
function tableUnder(heading: string): string[][] {
  const start = page.indexOf(`\n## ${heading}\n`);
  expect(start).toBeGreaterThan(-1);
  const end = page.indexOf("\n## ", start + 1);
  const section = page.slice(start, end === -1 ? undefined : end);
  return section
    .split("\n")
    .filter((line) => line.startsWith("|"))
    .slice(2)
    .map((line) =>
      line
        .slice(1, -1)
        .split("|")
        .map((cell) => cell.trim()),
    );
}

function documented(heading: string): Map<string, Field> {
  return new Map(
    tableUnder(heading).map(([field, type, required]) => [
      field!.replace(/`/g, ""),
      { type: type!, required: required === "yes" },
    ]),
  );
}

const sorted = (fields: Map<string, Field>) =>
  [...fields].sort(([a], [b]) => a.localeCompare(b)).map(([path, field]) => ({ path, ...field }));

describe("docs/api-fields.md", () => {
  const s1 = fieldsOf(S1Record as Schema);
  const s2 = fieldsOf(S2Record as Schema);
  const both = new Map(
    [...s1].filter(([path, field]) => {
      const other = s2.get(path);
      return other?.type === field.type && other.required === field.required;
    }),
  );
  const only = (fields: Map<string, Field>) =>
    new Map([...fields].filter(([path]) => !both.has(path)));

  test("the schemas have the fields this test expects to compare", () => {
    expect(s1.get("vault.multiplier")).toEqual({ type: "number", required: true });
    expect(s1.get("itemCache.id")).toEqual({ type: "integer", required: true });
    expect(s1.get("inferred")).toEqual({ type: "array of strings", required: false });
    expect(both.size).toBeGreaterThan(10);
  });

  test("lists the fields both records carry, with their types", () => {
    expect(sorted(documented("Fields of both records"))).toEqual(sorted(both));
  });

  test("lists the fields only S1 records carry, with their types", () => {
    expect(sorted(documented("Fields of S1 records only"))).toEqual(sorted(only(s1)));
  });

  test("lists the fields only S2 records carry, with their types", () => {
    expect(sorted(documented("Fields of S2 records only"))).toEqual(sorted(only(s2)));
  });

  test("lists every problem the API answers with, by status and slug", async () => {
    const defined = new Set<string>();
    for (const file of new Glob("api/**/*.ts").scanSync({ cwd: ROOT.pathname })) {
      const source = await Bun.file(new URL(file, ROOT)).text();
      for (const [, status, slug] of source.matchAll(
        /readonly status = (\d+);[\s\S]*?readonly slug = "([a-z-]+)"/g,
      )) {
        defined.add(`${status} ${slug}`);
      }
    }
    const listed = new Set(
      tableUnder("Errors").map(([status, slug]) => `${status} ${slug!.replace(/`/g, "")}`),
    );
    expect(defined.size).toBeGreaterThan(5);
    expect([...listed].sort()).toEqual([...defined].sort());
  });
});
