// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// Many view calls in one eth_call, each a STATICCALL with its own gas cap. Multicall3's aggregate3
/// hands every call 63/64 of the gas left, so one call that halts (an invalid opcode or an endless
/// loop burns all it is given) starves every call after it; here a halt burns its cap and no more.
/// The indexer never deploys it: it places the runtime code at an address through eth_call's state
/// override (indexer/chain/static-call-batch.ts).
contract StaticCallBatch {
    struct Call {
        address target;
        bytes data;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    /// Gas for the call's own bookkeeping around a STATICCALL (cold account access, argument copy).
    uint256 private constant CALL_OVERHEAD = 10_000;

    /// Runs `calls` in order and answers for a prefix of them. It stops before a call once the gas
    /// left could not give it its full `gasPerCall` and still return the answer, and before adding a
    /// result that would take the answer past `maxAnswerBytes` of return data: the caller asks again
    /// for the rest. A result larger than `maxAnswerBytes` on its own is reported as
    /// (false, empty), for the caller to read by itself. A call's revert data comes back as is.
    function run(Call[] calldata calls, uint256 gasPerCall, uint256 maxAnswerBytes)
        external
        view
        returns (Result[] memory results)
    {
        results = new Result[](calls.length);
        uint256 needed = gasPerCall + gasPerCall / 63 + CALL_OVERHEAD + answerGas(calls.length, maxAnswerBytes);
        uint256 answerBytes;
        uint256 done;
        for (; done < calls.length; done++) {
            if (gasleft() < needed) break;
            (bool success, uint256 size) = staticCallCapped(calls[done].target, calls[done].data, gasPerCall);
            if (answerBytes + size > maxAnswerBytes) {
                if (done > 0) break;
                results[done] = Result(false, "");
                continue;
            }
            answerBytes += size;
            results[done] = Result(success, returnData(size));
        }
        assembly ("memory-safe") {
            mstore(results, done)
        }
    }

    /// A STATICCALL that copies nothing back yet, so an oversized answer costs no memory here.
    function staticCallCapped(address target, bytes calldata data, uint256 gasCap)
        private
        view
        returns (bool success, uint256 size)
    {
        assembly ("memory-safe") {
            let input := mload(0x40)
            calldatacopy(input, data.offset, data.length)
            success := staticcall(gasCap, target, input, data.length, 0, 0)
            size := returndatasize()
        }
    }

    function returnData(uint256 size) private pure returns (bytes memory data) {
        data = new bytes(size);
        assembly ("memory-safe") {
            returndatacopy(add(data, 32), 0, size)
        }
    }

    /// What returning the largest answer can cost once the calls are done: memory for every result
    /// twice (as collected, then ABI-encoded), priced as the EVM prices memory (3 gas a word plus
    /// words² / 512), and about 20 gas a word for the copying itself.
    function answerGas(uint256 count, uint256 maxAnswerBytes) private pure returns (uint256) {
        uint256 words = (2 * (maxAnswerBytes + count * 256)) / 32 + 1024;
        return 3 * words + (words * words) / 512 + 20 * words;
    }
}
