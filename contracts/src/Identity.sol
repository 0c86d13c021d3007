// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// Only the class matters to the staker: "Hand of Citadel" unlocks the Hand claim.
contract Identity is Ownable {
    string internal constant CLASS_UNAVAILABLE = "Identity: class unavailable";

    mapping(uint256 => string) private _classes;
    /// Identities whose getClass reverts: a view the staker's points depend on that refuses.
    mapping(uint256 => bool) private _classReverts;

    constructor() Ownable(msg.sender) {}

    function setClasses(uint256[] calldata _identityIds, string[] calldata _classNames) external onlyOwner {
        for (uint256 i; i < _identityIds.length; ++i) {
            _classes[_identityIds[i]] = _classNames[i];
        }
    }

    /// Test switch: getClass(_identityId) reverts with a reason while `_reverts` is set.
    function setClassReverts(uint256 _identityId, bool _reverts) external onlyOwner {
        _classReverts[_identityId] = _reverts;
    }

    function getClass(uint256 _identityId) external view returns (string memory) {
        require(!_classReverts[_identityId], CLASS_UNAVAILABLE);
        return _classes[_identityId];
    }
}
