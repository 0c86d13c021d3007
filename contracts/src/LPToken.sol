// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// Stands in for the BYTES/ETH liquidity token that the LP pool accepts.
contract LPToken is ERC20, Ownable {
    constructor() ERC20("BYTES-ETH LP", "BYTES-LP") Ownable(msg.sender) {}

    function mint(address _to, uint256 _amount) external onlyOwner {
        _mint(_to, _amount);
    }
}
