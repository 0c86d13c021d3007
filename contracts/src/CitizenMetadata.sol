// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Base64} from "@openzeppelin/contracts/utils/Base64.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";

/// Inline token metadata in the shape of Neo Tokyo's: a base64 data URI holding name, image, traits.
library CitizenMetadata {
    /// `.invalid` is a reserved TLD, so the image is an http(s) URL that is never fetched for real.
    string internal constant IMAGE_BASE = "https://citizens.devnet.invalid/";

    function dataUri(string memory name, string memory imagePath, string memory attributes)
        internal
        pure
        returns (string memory)
    {
        string memory json = string.concat(
            '{"name":"', name, '","image":"', IMAGE_BASE, imagePath, '","attributes":[', attributes, "]}"
        );
        return string.concat("data:application/json;base64,", Base64.encode(bytes(json)));
    }

    function trait(string memory traitType, uint256 value) internal pure returns (string memory) {
        return string.concat('{"trait_type":"', traitType, '","value":', Strings.toString(value), "}");
    }
}
