import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compileErrors, validate } from "@readme/openapi-parser";
import Ajv from "ajv";
import { createApiHarness, STAKER } from "./support.ts";

type Operation = { responses: Record<string, { content?: Record<string, { schema: object }> }> };
type Document = { paths: Record<string, { get: Operation }> };

/** The served document is valid OpenAPI 3, and what the API serves matches what it declares. */
describe("the OpenAPI document", () => {
  let api: Awaited<ReturnType<typeof createApiHarness>>;
  let document: Document;

  beforeAll(async () => {
    api = await createApiHarness();
    await api.setCheckpoint(100n);
    await api.insertCitizens([
      { season: 1, citizenId: 7n, stakedBytes: 1_500_000_000_000_000_000n, bytesPoints: 0n },
      { season: 2, citizenId: 7n },
    ]);
    document = (await (await api.request("/openapi.json")).json()) as Document;
  });

  afterAll(async () => {
    await api?.close();
  });

  test("validates as OpenAPI 3", async () => {
    const result = await validate(structuredClone(document) as never);
    expect(result.valid ? "" : compileErrors(result)).toBe("");
  });

  const ajv = new Ajv({ strict: false, allErrors: true });
  const schemaOf = (path: string) => {
    const content = document.paths[path]?.get.responses["200"]?.content;
    const schema = content?.["application/json"]?.schema;
    if (!schema) throw new Error(`no 200 JSON schema for ${path}`);
    return ajv.compile(schema);
  };

  for (const [path, served] of [
    ["/v1/staking/citizens/s1/{id}", `/v1/staking/citizens/s1/7?address=${STAKER}`],
    ["/v1/staking/citizens/s2/{id}", `/v1/staking/citizens/s2/7?address=${STAKER}`],
    ["/v1/staking/citizens", `/v1/staking/citizens?address=${STAKER}`],
  ] as const) {
    test(`what ${path} serves matches its declared 200 schema`, async () => {
      const response = await api.request(served);
      expect(response.status).toBe(200);
      const check = schemaOf(path);
      const body = await response.json();
      expect(check(body) ? [] : check.errors).toEqual([]);
    });
  }

  test("the declared schemas are strict enough to tell an S2 record from an S1 record", async () => {
    const s2 = await (await api.request(`/v1/staking/citizens/s2/7?address=${STAKER}`)).json();
    expect(schemaOf("/v1/staking/citizens/s1/{id}")(s2)).toBe(false);
  });
});
