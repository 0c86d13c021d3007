// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// Stands in for the staker to make a huge log answer cheaply: a test installs this runtime code at
/// the staker's address (anvil_setCode), calls flood, then puts the staker's code back. The logs
/// then come from the staker's address with the staker's own Claim signature.
contract StakerLogFlood {
    event Claim(address indexed recipient, uint256 reward, uint256 tax);

    function flood(address _recipient, uint256 _count) external {
        for (uint256 i; i < _count; ++i) {
            emit Claim(_recipient, i, 0);
        }
    }
}
