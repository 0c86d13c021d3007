import { describePackedClient } from "./packed-client.ts";

describePackedClient(
  { name: "bun", install: ["bun", "add"], runtime: "bun" },
  { packageChecks: false },
);
