// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// Only the class matters to the staker: "Hand of Citadel" unlocks the Hand claim.
contract Identity is Ownable {
    mapping(uint256 => string) private _classes;

    constructor() Ownable(msg.sender) {}

    function setClasses(uint256[] calldata _identityIds, string[] calldata _classNames) external onlyOwner {
        for (uint256 i; i < _identityIds.length; ++i) {
            _classes[_identityIds[i]] = _classNames[i];
        }
    }

    function getClass(uint256 _identityId) external view returns (string memory) {
        return _classes[_identityId];
    }
}
