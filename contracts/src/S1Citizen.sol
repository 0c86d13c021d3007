// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";
import {CitizenMetadata} from "./CitizenMetadata.sol";

/// Season 1 citizens: each is built from an identity, an optional component vault, an item cache
/// and a land deed, and carries the base reward rate the staker turns into a credit yield.
contract S1Citizen is ERC721, Ownable {
    struct Components {
        uint256 identityId;
        uint256 vaultId;
        uint256 itemCacheId;
        uint256 landDeedId;
        uint256 rewardRate;
    }

    mapping(uint256 => Components) private _components;
    /// CitizenMetadata's fault per citizen; 0 (the default) is normal metadata.
    mapping(uint256 => uint8) private _metadataFaults;

    constructor() ERC721("Neo Tokyo Citizen", "NTCTZN") Ownable(msg.sender) {}

    /// A vault id of 0 means the citizen has no component vault.
    function mint(
        address _to,
        uint256 _citizenId,
        uint256 _identityId,
        uint256 _vaultId,
        uint256 _itemCacheId,
        uint256 _landDeedId,
        uint256 _rewardRate
    ) external onlyOwner {
        _components[_citizenId] = Components(_identityId, _vaultId, _itemCacheId, _landDeedId, _rewardRate);
        _mint(_to, _citizenId);
    }

    function getIdentityIdOfTokenId(uint256 _citizenId) external view returns (uint256) {
        return _components[_citizenId].identityId;
    }

    function getVaultIdOfTokenId(uint256 _citizenId) external view returns (uint256) {
        return _components[_citizenId].vaultId;
    }

    function getItemCacheIdOfTokenId(uint256 _citizenId) external view returns (uint256) {
        return _components[_citizenId].itemCacheId;
    }

    function getLandDeedIdOfTokenId(uint256 _citizenId) external view returns (uint256) {
        return _components[_citizenId].landDeedId;
    }

    function getRewardRateOfTokenId(uint256 _citizenId) external view returns (uint256) {
        return _components[_citizenId].rewardRate;
    }

    /// Test switch: makes this citizen's tokenURI break in one of CitizenMetadata's ways.
    function setMetadataFault(uint256 _citizenId, uint8 _fault) external onlyOwner {
        CitizenMetadata.checkFault(_fault);
        _metadataFaults[_citizenId] = _fault;
    }

    function tokenURI(uint256 _citizenId) public view override returns (string memory) {
        _requireOwned(_citizenId);
        uint8 fault = _metadataFaults[_citizenId];
        if (fault != CitizenMetadata.NORMAL) return CitizenMetadata.faultyUri(fault, _citizenId);
        Components storage components = _components[_citizenId];
        string memory id = Strings.toString(_citizenId);
        string memory attributes = string.concat(
            CitizenMetadata.trait("Identity", components.identityId),
            ",",
            CitizenMetadata.trait("Vault", components.vaultId),
            ",",
            CitizenMetadata.trait("Item Cache", components.itemCacheId),
            ",",
            CitizenMetadata.trait("Land Deed", components.landDeedId),
            ",",
            CitizenMetadata.trait("Reward Rate", components.rewardRate)
        );
        return CitizenMetadata.dataUri(string.concat("Citizen #", id), string.concat("s1/", id, ".png"), attributes);
    }
}
