import { parseAbi } from "viem";

/** The getters the indexer reads from the contracts the staker points at (docs/staker.md §3). */
export const s1CitizenAbi = parseAbi([
  "function getIdentityIdOfTokenId(uint256 citizenId) view returns (uint256)",
  "function getVaultIdOfTokenId(uint256 citizenId) view returns (uint256)",
  "function getItemCacheIdOfTokenId(uint256 citizenId) view returns (uint256)",
  "function getLandDeedIdOfTokenId(uint256 citizenId) view returns (uint256)",
  "function getRewardRateOfTokenId(uint256 citizenId) view returns (uint256)",
  "function tokenURI(uint256 citizenId) view returns (string)",
]);

export const s2CitizenAbi = parseAbi([
  "function getIdentityIdOfTokenId(uint256 citizenId) view returns (uint256)",
  "function getItemCacheIdOfTokenId(uint256 citizenId) view returns (uint256)",
  "function getLandDeedIdOfTokenId(uint256 citizenId) view returns (uint256)",
  "function tokenURI(uint256 citizenId) view returns (string)",
]);

export const vaultAbi = parseAbi([
  "function getCreditMultiplier(uint256 vaultId) view returns (string)",
]);

export const identityAbi = parseAbi([
  "function getClass(uint256 identityId) view returns (string)",
]);
