import { describePackedClient } from "./packed-client.ts";

describePackedClient(
  {
    name: "npm",
    install: ["npm", "install", "--no-audit", "--no-fund", "--prefer-offline"],
    runtime: "node",
  },
  { packageChecks: true },
);
