// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Base64} from "@openzeppelin/contracts/utils/Base64.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";

/// Inline token metadata in the shape of Neo Tokyo's: a base64 data URI holding name, image, traits.
/// It also plays the broken metadata seen on mainnet (reverting, unparsable or off-chain token URIs),
/// so tests can switch a single citizen's tokenURI into one of those shapes.
library CitizenMetadata {
    /// `.invalid` is a reserved TLD, so the image is an http(s) URL that is never fetched for real.
    string internal constant IMAGE_BASE = "https://citizens.devnet.invalid/";
    string internal constant METADATA_BASE = "https://citizens.devnet.invalid/metadata/";
    string internal constant REVERT_REASON = "CitizenMetadata: metadata unavailable";

    /// What tokenURI does for a citizen; the values are the `fault` argument of setMetadataFault.
    uint8 internal constant NORMAL = 0;
    uint8 internal constant REVERT_EMPTY = 1;
    uint8 internal constant REVERT_REASON_STRING = 2;
    uint8 internal constant REVERT_CUSTOM_ERROR = 3;
    uint8 internal constant REVERT_PANIC = 4;
    uint8 internal constant INVALID_OPCODE = 5;
    uint8 internal constant MALFORMED_JSON = 6;
    uint8 internal constant OFFCHAIN_URI = 7;
    uint8 internal constant EMPTY_URI = 8;

    error MetadataUnavailable(uint256 citizenId);
    error UnknownMetadataFault(uint8 fault);

    function dataUri(string memory name, string memory imagePath, string memory attributes)
        internal
        pure
        returns (string memory)
    {
        string memory json = string.concat(
            '{"name":"', name, '","image":"', IMAGE_BASE, imagePath, '","attributes":[', attributes, "]}"
        );
        return jsonDataUri(json);
    }

    function trait(string memory traitType, uint256 value) internal pure returns (string memory) {
        return string.concat('{"trait_type":"', traitType, '","value":', Strings.toString(value), "}");
    }

    /// Rejects a fault value no branch of faultyUri handles, so a typo in a test fails at the setter.
    function checkFault(uint8 fault) internal pure {
        if (fault > EMPTY_URI) revert UnknownMetadataFault(fault);
    }

    /// The tokenURI of a citizen whose metadata is broken: reverts in faults 1-5, returns a URI that
    /// is no usable inline metadata in faults 6-8. Callers handle NORMAL themselves.
    function faultyUri(uint8 fault, uint256 citizenId) internal pure returns (string memory) {
        string memory id = Strings.toString(citizenId);
        if (fault == REVERT_EMPTY) {
            assembly ("memory-safe") {
                revert(0, 0)
            }
        }
        if (fault == REVERT_REASON_STRING) revert(REVERT_REASON);
        if (fault == REVERT_CUSTOM_ERROR) revert MetadataUnavailable(citizenId);
        // Panic(0x01), as a failed internal check would raise.
        assert(fault != REVERT_PANIC);
        if (fault == INVALID_OPCODE) {
            assembly ("memory-safe") {
                invalid()
            }
        }
        // Cut off after the name: a valid data URI whose JSON does not parse.
        if (fault == MALFORMED_JSON) return jsonDataUri(string.concat('{"name":"Citizen #', id, '"'));
        if (fault == OFFCHAIN_URI) return string.concat(METADATA_BASE, id);
        if (fault == EMPTY_URI) return "";
        revert UnknownMetadataFault(fault);
    }

    function jsonDataUri(string memory json) private pure returns (string memory) {
        return string.concat("data:application/json;base64,", Base64.encode(bytes(json)));
    }
}
