// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// The S1 citizen getters the staker depends on.
interface ICitizenComponents {
    function getIdentityIdOfTokenId(uint256 citizenId) external view returns (uint256);

    function getVaultIdOfTokenId(uint256 citizenId) external view returns (uint256);

    function getRewardRateOfTokenId(uint256 citizenId) external view returns (uint256);
}

interface IVaultCredit {
    function getCreditMultiplier(uint256 vaultId) external view returns (string memory);
}

interface IIdentityClass {
    function getClass(uint256 identityId) external view returns (string memory);
}

interface IBytesRewards {
    function getReward(address recipient) external;
}

interface IStakerRewards {
    function claimReward(address recipient) external returns (uint256 reward, uint256 tax);
}
