import { InvalidArgumentError } from "commander";

/** A block number argument (`--from`, `--to`): digits only, as a bigint. */
export function blockNumber(value: string): bigint {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("expected a block number");
  return BigInt(value);
}
