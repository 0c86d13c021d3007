// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";

/**
 * Vaults carry a credit multiplier tier ("Low" ... "Very High", "?"). A vault that is a citizen's
 * component is minted to the citizen contract, as if absorbed into the citizen.
 */
contract Vault is ERC721, Ownable {
    mapping(uint256 => string) private _creditMultipliers;

    constructor() ERC721("Neo Tokyo Vault", "NTVAULT") Ownable(msg.sender) {}

    function mint(address _to, uint256 _vaultId, string calldata _creditMultiplier) external onlyOwner {
        _creditMultipliers[_vaultId] = _creditMultiplier;
        _mint(_to, _vaultId);
    }

    /// Unknown ids (and 0, "no vault") answer "" rather than reverting, as the staker expects.
    function getCreditMultiplier(uint256 _vaultId) external view returns (string memory) {
        return _creditMultipliers[_vaultId];
    }
}
