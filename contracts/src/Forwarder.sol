// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC721Receiver} from "@openzeppelin/contracts/token/ERC721/IERC721Receiver.sol";

/// A minimal contract wallet, as a Safe or a multicall looks to the staker: it holds citizens and
/// makes the staker calls itself, so a stake's arguments sit in an inner call frame, not in the
/// transaction's calldata. Test fixture: anyone may drive it.
contract Forwarder is IERC721Receiver {
    struct Call {
        address target;
        bytes data;
    }

    /// Performs every call in order; the first failure reverts the whole batch with its revert data.
    function execute(Call[] calldata _calls) external {
        for (uint256 i; i < _calls.length; ++i) {
            (bool ok, bytes memory returned) = _calls[i].target.call(_calls[i].data);
            if (!ok) {
                assembly ("memory-safe") {
                    revert(add(returned, 0x20), mload(returned))
                }
            }
        }
    }

    /// Performs every call in order and carries on past failures, so one transaction can hold a
    /// failed inner call next to successful ones. Returns which calls succeeded.
    function tryExecute(Call[] calldata _calls) external returns (bool[] memory succeeded) {
        succeeded = new bool[](_calls.length);
        for (uint256 i; i < _calls.length; ++i) {
            (succeeded[i],) = _calls[i].target.call(_calls[i].data);
        }
    }

    function onERC721Received(address, address, uint256, bytes calldata) external pure returns (bytes4) {
        return IERC721Receiver.onERC721Received.selector;
    }
}
