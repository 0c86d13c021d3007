// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";
import {CitizenMetadata} from "./CitizenMetadata.sol";

/// Season 2 ("Outer") citizens: no vault and no reward rate, so every one stakes alike.
contract S2Citizen is ERC721, Ownable {
    struct Components {
        uint256 identityId;
        uint256 itemCacheId;
        uint256 landDeedId;
    }

    mapping(uint256 => Components) private _components;
    /// CitizenMetadata's fault per citizen; 0 (the default) is normal metadata.
    mapping(uint256 => uint8) private _metadataFaults;

    constructor() ERC721("Neo Tokyo Outer Citizen", "NTOCTZN") Ownable(msg.sender) {}

    function mint(address _to, uint256 _citizenId, uint256 _identityId, uint256 _itemCacheId, uint256 _landDeedId)
        external
        onlyOwner
    {
        _components[_citizenId] = Components(_identityId, _itemCacheId, _landDeedId);
        _mint(_to, _citizenId);
    }

    function getIdentityIdOfTokenId(uint256 _citizenId) external view returns (uint256) {
        return _components[_citizenId].identityId;
    }

    function getItemCacheIdOfTokenId(uint256 _citizenId) external view returns (uint256) {
        return _components[_citizenId].itemCacheId;
    }

    function getLandDeedIdOfTokenId(uint256 _citizenId) external view returns (uint256) {
        return _components[_citizenId].landDeedId;
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
            CitizenMetadata.trait("Item Cache", components.itemCacheId),
            ",",
            CitizenMetadata.trait("Land Deed", components.landDeedId)
        );
        return CitizenMetadata.dataUri(
            string.concat("Outer Citizen #", id), string.concat("s2/", id, ".png"), attributes
        );
    }
}
