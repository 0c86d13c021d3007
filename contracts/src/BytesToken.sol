// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IStakerRewards} from "./StakingInterfaces.sol";

/// BYTES 2.0 for the devnet: staking rewards are minted here when the staker reports them.
contract BytesToken is ERC20, Ownable {
    address public immutable TREASURY;
    address public staker;

    constructor(address _treasury) ERC20("BYTES", "BYTES") Ownable(msg.sender) {
        TREASURY = _treasury;
    }

    /// Set after deployment because the staker itself is built with this token's address.
    function setStaker(address _staker) external onlyOwner {
        staker = _staker;
    }

    function mint(address _to, uint256 _amount) external onlyOwner {
        _mint(_to, _amount);
    }

    /// Anyone may settle anyone's rewards, as on mainnet; the staker logs a Claim every time.
    function getReward(address _to) external {
        (uint256 reward, uint256 tax) = IStakerRewards(staker).claimReward(_to);
        if (reward > 0) _mint(_to, reward);
        if (tax > 0) _mint(TREASURY, tax);
    }
}
