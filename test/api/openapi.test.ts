import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compileErrors, validate } from "@readme/openapi-parser";
import type { TObject } from "@sinclair/typebox";
import Ajv from "ajv";
import { CitizenQuery, ListQuery } from "../../api/modules/citizens/model.ts";
import { StreamQuery } from "../../api/modules/stream/model.ts";
import { createApiHarness, STAKER } from "./support.ts";

type Operation = {
  parameters?: { name: string; in: string }[];
  responses: Record<
    string,
    { content?: Record<string, { schema: object }>; headers?: Record<string, object> }
  >;
};
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

  for (const path of [
    "/v1/staking/citizens/s1/{id}",
    "/v1/staking/citizens/s2/{id}",
    "/v1/staking/citizens",
  ]) {
    test(`${path} declares its errors as problem+json and the headers it sends`, () => {
      const { responses } = document.paths[path]!.get;
      for (const status of ["400", "401", "404", "429", "503"]) {
        const content = responses[status]?.content;
        expect(Object.keys(content ?? {})).toEqual(["application/problem+json"]);
        const schema = content!["application/problem+json"]!.schema as {
          properties: Record<string, object>;
        };
        expect(Object.keys(schema.properties)).toEqual(
          expect.arrayContaining(["type", "title", "status", "detail"]),
        );
        expect(Object.keys(responses[status]!.headers ?? {})).toContain("x-indexed-block");
      }
      const headers = (status: string) => Object.keys(responses[status]?.headers ?? {});
      expect(headers("200")).toEqual(expect.arrayContaining(["x-indexed-block", "etag"]));
      expect(headers("304")).toEqual(expect.arrayContaining(["etag"]));
      expect(headers("401")).toContain("www-authenticate");
      expect(headers("429")).toContain("retry-after");
      expect(headers("503")).toContain("retry-after");
    });
  }

  /** Each endpoint's query, its `t` schema, and its path with the path parameters filled in. */
  const queries: [string, TObject, string][] = [
    ["/v1/staking/citizens/s1/{id}", CitizenQuery, "/v1/staking/citizens/s1/7"],
    ["/v1/staking/citizens/s2/{id}", CitizenQuery, "/v1/staking/citizens/s2/7"],
    ["/v1/staking/citizens", ListQuery, "/v1/staking/citizens"],
    ["/v1/staking/citizens/stream", StreamQuery, "/v1/staking/citizens/stream"],
  ];
  for (const [path, schema, served] of queries) {
    test(`${path} declares exactly the query parameters it takes, and refuses any other`, async () => {
      const declared = (document.paths[path]?.get.parameters ?? [])
        .filter((parameter) => parameter.in === "query")
        .map((parameter) => parameter.name);
      expect(declared.toSorted()).toEqual(Object.keys(schema.properties).toSorted());
      // The server knows each declared name (given twice, it is refused as a repeat) ...
      for (const name of declared) {
        const response = await api.request(`${served}?address=${STAKER}&${name}=1&${name}=1`);
        expect(response.status).toBe(400);
        expect(await response.json()).toMatchObject({
          parameter: name,
          detail: expect.stringContaining("more than once"),
        });
      }
      // ... and no other.
      const response = await api.request(`${served}?address=${STAKER}&undeclared=1`);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ parameter: "undeclared" });
    });
  }

  test("nested ids are declared as integers and the citizen id as a string", () => {
    const schema = document.paths["/v1/staking/citizens/s1/{id}"]!.get.responses["200"]!.content![
      "application/json"
    ]!.schema as {
      properties: Record<string, { type?: string; properties?: Record<string, { type?: string }> }>;
    };
    expect(schema.properties.id?.type).toBe("string");
    expect(schema.properties.stakedVaultId?.type).toBe("integer");
    for (const field of ["itemCache", "land", "identity", "vault"]) {
      expect(schema.properties[field]?.properties?.id?.type).toBe("integer");
    }
  });

  test("the declared schemas are strict enough to tell an S2 record from an S1 record", async () => {
    const s2 = await (await api.request(`/v1/staking/citizens/s2/7?address=${STAKER}`)).json();
    expect(schemaOf("/v1/staking/citizens/s1/{id}")(s2)).toBe(false);
  });
});
