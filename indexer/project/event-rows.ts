import type { StakerEventRow } from "../../db/schema.ts";
import { isCitizenAsset, SEASON_OF_ASSET, type Season } from "../../lib/vocabulary.ts";
import type { StakerContracts } from "../chain/contracts.ts";
import type { StakerLog } from "../chain/logs.ts";

export type { Season };

const LOW_128 = (1n << 128n) - 1n;

export type AssetType = NonNullable<StakerEventRow["assetType"]>;

export function assetTypeOf(asset: string, contracts: StakerContracts): AssetType | null {
  switch (asset.toLowerCase()) {
    case contracts.s1Citizen:
      return "s1_citizen";
    case contracts.s2Citizen:
      return "s2_citizen";
    case contracts.bytes:
      return "bytes";
    case contracts.lp:
      return "lp";
    default:
      return null;
  }
}

/** An S1/S2 option packs duration << 128 | multiplier; a BYTES "option" packs season << 128 | citizen. */
export function splitOption(option: bigint): { high: bigint; low: bigint } {
  return { high: option >> 128n, low: option & LOW_128 };
}

/** The staker event as a row of staker_events, with the citizen it changes when it changes one. */
export function toEventRow(log: StakerLog, contracts: StakerContracts): StakerEventRow {
  const base = {
    blockNumber: log.blockNumber,
    logIndex: log.logIndex,
    blockHash: log.blockHash,
    transactionHash: log.transactionHash,
  };
  const { decoded } = log;
  switch (decoded.eventName) {
    case "Claim":
      return {
        ...base,
        event: "Claim",
        account: decoded.args.recipient.toLowerCase(),
        reward: decoded.args.reward,
        tax: decoded.args.tax,
      };
    case "Stake": {
      const assetType = assetTypeOf(decoded.args.asset, contracts);
      const row: StakerEventRow = {
        ...base,
        event: "Stake",
        account: decoded.args.staker.toLowerCase(),
        asset: decoded.args.asset.toLowerCase(),
        assetType,
        timelockOption: decoded.args.timelockOption,
        amountOrTokenId: decoded.args.amountOrTokenId,
      };
      if (isCitizenAsset(assetType)) {
        row.citizenSeason = SEASON_OF_ASSET[assetType];
        row.citizenId = decoded.args.amountOrTokenId;
      } else if (assetType === "bytes") {
        const { high: season, low: citizenId } = splitOption(decoded.args.timelockOption);
        row.citizenSeason = Number(season);
        row.citizenId = citizenId;
      }
      return row;
    }
    case "Withdraw": {
      const assetType = assetTypeOf(decoded.args.asset, contracts);
      const row: StakerEventRow = {
        ...base,
        event: "Withdraw",
        account: decoded.args.caller.toLowerCase(),
        asset: decoded.args.asset.toLowerCase(),
        assetType,
        amountOrTokenId: decoded.args.amountOrTokenId,
      };
      if (isCitizenAsset(assetType)) {
        row.citizenSeason = SEASON_OF_ASSET[assetType];
        row.citizenId = decoded.args.amountOrTokenId;
      }
      return row;
    }
    default:
      // A name added to contracts/staker-events.ts fails the typecheck here until it has a case.
      throw new Error(
        `unexpected staker event ${(decoded satisfies never as { eventName: string }).eventName}`,
      );
  }
}
