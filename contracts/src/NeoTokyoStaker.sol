// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IERC721} from "@openzeppelin/contracts/token/ERC721/IERC721.sol";
import {IBytesRewards, ICitizenComponents, IIdentityClass, IVaultCredit} from "./StakingInterfaces.sol";

/**
 * A devnet staker with the mainnet NeoTokyoStaker's observable surface: the same events, errors,
 * `stake`/`withdraw` calldata and views, and the same points rules. Rewards are a plain share of
 * each pool's emissions since the staker's last claim; mainnet's per-point accumulator and its
 * soulbound receipts are left out because nothing the indexer reads depends on them.
 */
contract NeoTokyoStaker is Ownable {
    using SafeERC20 for IERC20;

    enum AssetType {
        S1_CITIZEN,
        S2_CITIZEN,
        BYTES,
        LP
    }

    struct StakedS1Citizen {
        uint256 stakedBytes;
        uint256 timelockEndTime;
        uint256 points;
        uint256 stakedVaultId;
        bool hasVault;
    }

    struct StakedS1CitizenOutput {
        uint256 citizenId;
        uint256 stakedBytes;
        uint256 timelockEndTime;
        uint256 points;
        uint256 stakedVaultId;
        bool hasVault;
    }

    struct StakedS2Citizen {
        uint256 stakedBytes;
        uint256 timelockEndTime;
        uint256 points;
    }

    struct StakedS2CitizenOutput {
        uint256 citizenId;
        uint256 stakedBytes;
        uint256 timelockEndTime;
        uint256 points;
    }

    struct LPPosition {
        uint256 amount;
        uint256 timelockEndTime;
        uint256 points;
        uint256 multiplier;
    }

    struct StakerPosition {
        StakedS1CitizenOutput[] stakedS1Citizens;
        StakedS2CitizenOutput[] stakedS2Citizens;
        LPPosition stakedLPPosition;
    }

    struct RewardWindow {
        uint128 startTime;
        uint128 reward;
    }

    struct PoolConfigurationInput {
        AssetType assetType;
        uint256 daoTax;
        RewardWindow[] rewardWindows;
    }

    struct PoolData {
        uint256 totalPoints;
        uint256 daoTax;
        uint256 rewardCount;
        mapping(uint256 => RewardWindow) rewardWindows;
    }

    event Stake(address indexed staker, address indexed asset, uint256 timelockOption, uint256 amountOrTokenId);
    event Withdraw(address indexed caller, address indexed asset, uint256 amountOrTokenId);
    event Claim(address indexed recipient, uint256 reward, uint256 tax);

    error AmountExceedsCap(uint256 attemptedAmount, uint256 cap);
    error CallerIsNotBYTES();
    error CannotStakeIntoUnownedCitizen(uint256 citizenId, uint256 seasonId);
    error CannotWithdrawUnownedS1(uint256 citizenId);
    error CannotWithdrawUnownedS2(uint256 citizenId);
    error CitizenAlreadyHasVault(uint256 componentVaultId, uint256 noncomponentVaultId);
    error CitizenDoesNotExist(uint256 citizenId);
    error CitizenIsNotHand(uint256 citizenId);
    error InactivePool(uint256 assetType);
    error InvalidAssetType(uint256 assetType);
    error InvalidSeasonId(uint256 seasonId);
    error InvalidTimelockOption(uint256 assetType, uint256 timelockId);
    error LockedConfigurationOfLP();
    error MismatchedTimelock();
    error NotEnoughLPTokens(uint256 attemptedWithdraw, uint256 position);
    error RewardWindowTimesMustIncrease();
    error TimelockNotCleared(uint256 endTime);
    error UnconfiguredPool(uint256 assetType);
    error UnknowablePosition(uint256 assetType);

    /// A timelock option packs its duration in the high 128 bits and its multiplier in the low 128.
    uint256 private constant MULTIPLIER_MASK = type(uint128).max;
    uint256 private constant DAO_TAX_DENOMINATOR = 10_000;
    string private constant HAND_CLASS = "Hand of Citadel";
    string private constant HAND_VAULT_TIER = "?";

    address public immutable BYTES;
    address public immutable S1_CITIZEN;
    address public immutable S2_CITIZEN;
    address public immutable IDENTITY;
    address public immutable VAULT;
    address public LP;
    bool public lpLocked;

    uint256 public VAULT_CAP;
    uint256 public NO_VAULT_CAP;

    mapping(AssetType => mapping(uint256 => uint256)) public timelockOptions;
    mapping(string => uint256) public identityCreditPoints;
    mapping(string => uint256) public vaultCreditMultiplier;
    mapping(uint256 => mapping(string => string)) public identityCreditYield;

    mapping(address => mapping(uint256 => StakedS1Citizen)) public stakedS1;
    mapping(address => mapping(uint256 => StakedS2Citizen)) public stakedS2;
    mapping(address => LPPosition) public stakerLPPosition;
    mapping(address => mapping(AssetType => uint256)) public lastRewardTime;

    mapping(address => uint256[]) private _stakerS1Position;
    mapping(address => uint256[]) private _stakerS2Position;
    mapping(AssetType => PoolData) private _pools;

    constructor(
        address _bytes,
        address _s1Citizen,
        address _s2Citizen,
        address _lpToken,
        address _identity,
        address _vault,
        uint256 _vaultCap,
        uint256 _noVaultCap
    ) Ownable(msg.sender) {
        BYTES = _bytes;
        S1_CITIZEN = _s1Citizen;
        S2_CITIZEN = _s2Citizen;
        LP = _lpToken;
        IDENTITY = _identity;
        VAULT = _vault;
        VAULT_CAP = _vaultCap;
        NO_VAULT_CAP = _noVaultCap;
    }

    /**
     * The last three words are unnamed because their meaning depends on the asset type:
     * S1 (citizenId, vaultId, handClaimant), S2 (citizenId), BYTES (amount, citizenId, seasonId),
     * LP (amount). The mainnet ABI has them unnamed too.
     */
    function stake(AssetType _assetType, uint256 _timelockId, uint256, uint256, uint256) external {
        PoolData storage pool = _pools[_assetType];
        if (pool.rewardCount == 0) revert UnconfiguredPool(uint256(_assetType));
        if (pool.rewardWindows[0].startTime >= block.timestamp) revert InactivePool(uint256(_assetType));
        uint256 timelockOption = timelockOptions[_assetType][_timelockId];
        if (timelockOption == 0) revert InvalidTimelockOption(uint256(_assetType), _timelockId);

        IBytesRewards(BYTES).getReward(msg.sender);

        if (_assetType == AssetType.S1_CITIZEN) _stakeS1Citizen(timelockOption);
        else if (_assetType == AssetType.S2_CITIZEN) _stakeS2Citizen(timelockOption);
        else if (_assetType == AssetType.BYTES) _stakeBytes();
        else _stakeLP(timelockOption);
    }

    /// The second word is a citizen id for S1/S2 and an LP amount for LP.
    function withdraw(AssetType _assetType, uint256) external {
        if (_assetType == AssetType.BYTES) revert InvalidAssetType(uint256(_assetType));

        IBytesRewards(BYTES).getReward(msg.sender);

        if (_assetType == AssetType.S1_CITIZEN) _withdrawS1Citizen();
        else if (_assetType == AssetType.S2_CITIZEN) _withdrawS2Citizen();
        else _withdrawLP();
    }

    function claimReward(address _recipient) external returns (uint256, uint256) {
        if (msg.sender != BYTES) revert CallerIsNotBYTES();
        (uint256 s1Reward, uint256 s1Tax) = _claimPool(AssetType.S1_CITIZEN, _recipient);
        (uint256 s2Reward, uint256 s2Tax) = _claimPool(AssetType.S2_CITIZEN, _recipient);
        (uint256 lpReward, uint256 lpTax) = _claimPool(AssetType.LP, _recipient);
        uint256 reward = s1Reward + s2Reward + lpReward;
        uint256 tax = s1Tax + s2Tax + lpTax;
        emit Claim(_recipient, reward, tax);
        return (reward, tax);
    }

    function getCreditYield(uint256 _citizenId, uint256 _vaultId) public view returns (string memory) {
        uint256 rewardRate = ICitizenComponents(S1_CITIZEN).getRewardRateOfTokenId(_citizenId);
        if (rewardRate == 0) revert CitizenDoesNotExist(_citizenId);
        string memory vaultTier = _vaultId == 0 ? "" : IVaultCredit(VAULT).getCreditMultiplier(_vaultId);
        return identityCreditYield[rewardRate][vaultTier];
    }

    function getConfiguredVaultMultiplier(uint256 _vaultId) public view returns (uint256) {
        return vaultCreditMultiplier[IVaultCredit(VAULT).getCreditMultiplier(_vaultId)];
    }

    function getStakerPosition(address _staker, AssetType _assetType) external view returns (uint256[] memory) {
        if (_assetType == AssetType.S1_CITIZEN) return _stakerS1Position[_staker];
        if (_assetType == AssetType.S2_CITIZEN) return _stakerS2Position[_staker];
        revert UnknowablePosition(uint256(_assetType));
    }

    function getStakerPositions(address _staker) external view returns (StakerPosition memory) {
        uint256[] storage s1Ids = _stakerS1Position[_staker];
        StakedS1CitizenOutput[] memory s1Citizens = new StakedS1CitizenOutput[](s1Ids.length);
        for (uint256 i; i < s1Ids.length; ++i) {
            StakedS1Citizen storage citizen = stakedS1[_staker][s1Ids[i]];
            s1Citizens[i] = StakedS1CitizenOutput({
                citizenId: s1Ids[i],
                stakedBytes: citizen.stakedBytes,
                timelockEndTime: citizen.timelockEndTime,
                points: citizen.points,
                stakedVaultId: citizen.stakedVaultId,
                hasVault: citizen.hasVault
            });
        }
        uint256[] storage s2Ids = _stakerS2Position[_staker];
        StakedS2CitizenOutput[] memory s2Citizens = new StakedS2CitizenOutput[](s2Ids.length);
        for (uint256 i; i < s2Ids.length; ++i) {
            StakedS2Citizen storage citizen = stakedS2[_staker][s2Ids[i]];
            s2Citizens[i] = StakedS2CitizenOutput({
                citizenId: s2Ids[i],
                stakedBytes: citizen.stakedBytes,
                timelockEndTime: citizen.timelockEndTime,
                points: citizen.points
            });
        }
        return StakerPosition(s1Citizens, s2Citizens, stakerLPPosition[_staker]);
    }

    function configureTimelockOptions(
        AssetType _assetType,
        uint256[] calldata _timelockIds,
        uint256[] calldata _encodedSettings
    ) external onlyOwner {
        for (uint256 i; i < _timelockIds.length; ++i) {
            timelockOptions[_assetType][_timelockIds[i]] = _encodedSettings[i];
        }
    }

    function configureIdentityCreditYields(
        uint256[] calldata _citizenRewardRates,
        string[] calldata _vaultRewardRates,
        string[] calldata _identityCreditYields
    ) external onlyOwner {
        for (uint256 i; i < _citizenRewardRates.length; ++i) {
            identityCreditYield[_citizenRewardRates[i]][_vaultRewardRates[i]] = _identityCreditYields[i];
        }
    }

    function configureIdentityCreditPoints(string[] calldata _identityCreditYields, uint256[] calldata _points)
        external
        onlyOwner
    {
        for (uint256 i; i < _identityCreditYields.length; ++i) {
            identityCreditPoints[_identityCreditYields[i]] = _points[i];
        }
    }

    function configureVaultCreditMultipliers(string[] calldata _vaultCreditMultipliers, uint256[] calldata _multipliers)
        external
        onlyOwner
    {
        for (uint256 i; i < _vaultCreditMultipliers.length; ++i) {
            vaultCreditMultiplier[_vaultCreditMultipliers[i]] = _multipliers[i];
        }
    }

    function configureLP(address _lp) external onlyOwner {
        if (lpLocked) revert LockedConfigurationOfLP();
        LP = _lp;
    }

    function lockLP() external onlyOwner {
        lpLocked = true;
    }

    function configureCaps(uint256 _vaultedCap, uint256 _unvaultedCap) external onlyOwner {
        VAULT_CAP = _vaultedCap;
        NO_VAULT_CAP = _unvaultedCap;
    }

    function configurePools(PoolConfigurationInput[] calldata _inputs) external onlyOwner {
        for (uint256 i; i < _inputs.length; ++i) {
            PoolData storage pool = _pools[_inputs[i].assetType];
            RewardWindow[] calldata windows = _inputs[i].rewardWindows;
            pool.daoTax = _inputs[i].daoTax;
            for (uint256 j; j < windows.length; ++j) {
                if (j > 0 && windows[j].startTime <= windows[j - 1].startTime) {
                    revert RewardWindowTimesMustIncrease();
                }
                pool.rewardWindows[j] = windows[j];
            }
            pool.rewardCount = windows.length;
        }
    }

    function _stakeS1Citizen(uint256 timelockOption) private {
        uint256 citizenId = _calldataWord(0x44);
        uint256 vaultId = _calldataWord(0x64);
        uint256 handClaimant = _calldataWord(0x84);

        IERC721(S1_CITIZEN).transferFrom(msg.sender, address(this), citizenId);
        uint256 componentVaultId = ICitizenComponents(S1_CITIZEN).getVaultIdOfTokenId(citizenId);

        StakedS1Citizen storage citizen = stakedS1[msg.sender][citizenId];
        uint256 effectiveVaultId;
        if (componentVaultId != 0) {
            if (vaultId != 0) revert CitizenAlreadyHasVault(componentVaultId, vaultId);
            citizen.hasVault = true;
            effectiveVaultId = componentVaultId;
        } else if (vaultId != 0) {
            IERC721(VAULT).transferFrom(msg.sender, address(this), vaultId);
            citizen.hasVault = true;
            citizen.stakedVaultId = vaultId;
            effectiveVaultId = vaultId;
        }

        // The credit yield follows the citizen's own (component) vault, never a separately staked one.
        uint256 identityPoints = identityCreditPoints[getCreditYield(citizenId, componentVaultId)];

        uint256 vaultMultiplier = 100;
        // Only exactly 1 claims the Hand bonus; any other value stakes as an ordinary citizen.
        if (handClaimant == 1) {
            uint256 identityId = ICitizenComponents(S1_CITIZEN).getIdentityIdOfTokenId(citizenId);
            string memory identityClass = IIdentityClass(IDENTITY).getClass(identityId);
            if (keccak256(bytes(identityClass)) != keccak256(bytes(HAND_CLASS))) revert CitizenIsNotHand(citizenId);
            vaultMultiplier = vaultCreditMultiplier[HAND_VAULT_TIER];
        } else if (effectiveVaultId != 0) {
            vaultMultiplier = getConfiguredVaultMultiplier(effectiveVaultId);
        }

        // Two floored divisions, in this order, as mainnet computes them.
        uint256 points = identityPoints * vaultMultiplier * (timelockOption & MULTIPLIER_MASK) / 100 / 100;
        citizen.points = points;
        citizen.timelockEndTime = block.timestamp + (timelockOption >> 128);
        _stakerS1Position[msg.sender].push(citizenId);
        _pools[AssetType.S1_CITIZEN].totalPoints += points;

        emit Stake(msg.sender, S1_CITIZEN, timelockOption, citizenId);
    }

    function _stakeS2Citizen(uint256 timelockOption) private {
        uint256 citizenId = _calldataWord(0x44);
        IERC721(S2_CITIZEN).transferFrom(msg.sender, address(this), citizenId);

        StakedS2Citizen storage citizen = stakedS2[msg.sender][citizenId];
        uint256 points = 100 * (timelockOption & MULTIPLIER_MASK) / 100;
        citizen.points = points;
        citizen.timelockEndTime = block.timestamp + (timelockOption >> 128);
        _stakerS2Position[msg.sender].push(citizenId);
        _pools[AssetType.S2_CITIZEN].totalPoints += points;

        emit Stake(msg.sender, S2_CITIZEN, timelockOption, citizenId);
    }

    function _stakeBytes() private {
        uint256 amount = _calldataWord(0x44);
        uint256 citizenId = _calldataWord(0x64);
        uint256 seasonId = _calldataWord(0x84);

        IERC20(BYTES).safeTransferFrom(msg.sender, address(this), amount);
        // Floored per deposit: two deposits of 3e18 earn 2 points, one of 6e18 earns 3.
        uint256 bonusPoints = amount * 100 / 200e18;

        if (seasonId == 1) {
            StakedS1Citizen storage citizen = stakedS1[msg.sender][citizenId];
            uint256 cap = citizen.hasVault ? VAULT_CAP : NO_VAULT_CAP;
            if (citizen.stakedBytes + amount > cap) revert AmountExceedsCap(citizen.stakedBytes + amount, cap);
            if (citizen.timelockEndTime == 0) revert CannotStakeIntoUnownedCitizen(citizenId, seasonId);
            citizen.stakedBytes += amount;
            citizen.points += bonusPoints;
            _pools[AssetType.S1_CITIZEN].totalPoints += bonusPoints;
        } else if (seasonId == 2) {
            StakedS2Citizen storage citizen = stakedS2[msg.sender][citizenId];
            if (citizen.stakedBytes + amount > NO_VAULT_CAP) {
                revert AmountExceedsCap(citizen.stakedBytes + amount, NO_VAULT_CAP);
            }
            if (citizen.timelockEndTime == 0) revert CannotStakeIntoUnownedCitizen(citizenId, seasonId);
            citizen.stakedBytes += amount;
            citizen.points += bonusPoints;
            _pools[AssetType.S2_CITIZEN].totalPoints += bonusPoints;
        } else {
            revert InvalidSeasonId(seasonId);
        }

        emit Stake(msg.sender, BYTES, (seasonId << 128) + citizenId, amount);
    }

    function _stakeLP(uint256 timelockOption) private {
        uint256 amount = _calldataWord(0x44);
        IERC20(LP).safeTransferFrom(msg.sender, address(this), amount);

        uint256 multiplier = timelockOption & MULTIPLIER_MASK;
        LPPosition storage position = stakerLPPosition[msg.sender];
        if (position.multiplier != 0 && position.multiplier != multiplier) revert MismatchedTimelock();

        uint256 points = amount * 100 / 1e18 * multiplier / 100;
        position.amount += amount;
        position.timelockEndTime = block.timestamp + (timelockOption >> 128);
        position.points += points;
        position.multiplier = multiplier;
        _pools[AssetType.LP].totalPoints += points;

        emit Stake(msg.sender, LP, timelockOption, amount);
    }

    function _withdrawS1Citizen() private {
        uint256 citizenId = _calldataWord(0x24);
        StakedS1Citizen storage citizen = stakedS1[msg.sender][citizenId];
        if (block.timestamp < citizen.timelockEndTime) revert TimelockNotCleared(citizen.timelockEndTime);
        if (citizen.timelockEndTime == 0) revert CannotWithdrawUnownedS1(citizenId);

        if (citizen.stakedBytes > 0) IERC20(BYTES).safeTransfer(msg.sender, citizen.stakedBytes);
        // A component vault stays inside the citizen; only a separately staked one comes back.
        if (citizen.stakedVaultId != 0) {
            IERC721(VAULT).transferFrom(address(this), msg.sender, citizen.stakedVaultId);
        }
        IERC721(S1_CITIZEN).transferFrom(address(this), msg.sender, citizenId);

        _removeId(_stakerS1Position[msg.sender], citizenId);
        _pools[AssetType.S1_CITIZEN].totalPoints -= citizen.points;
        delete stakedS1[msg.sender][citizenId];

        emit Withdraw(msg.sender, S1_CITIZEN, citizenId);
    }

    function _withdrawS2Citizen() private {
        uint256 citizenId = _calldataWord(0x24);
        StakedS2Citizen storage citizen = stakedS2[msg.sender][citizenId];
        if (block.timestamp < citizen.timelockEndTime) revert TimelockNotCleared(citizen.timelockEndTime);
        if (citizen.timelockEndTime == 0) revert CannotWithdrawUnownedS2(citizenId);

        if (citizen.stakedBytes > 0) IERC20(BYTES).safeTransfer(msg.sender, citizen.stakedBytes);
        IERC721(S2_CITIZEN).transferFrom(address(this), msg.sender, citizenId);

        _removeId(_stakerS2Position[msg.sender], citizenId);
        _pools[AssetType.S2_CITIZEN].totalPoints -= citizen.points;
        delete stakedS2[msg.sender][citizenId];

        emit Withdraw(msg.sender, S2_CITIZEN, citizenId);
    }

    function _withdrawLP() private {
        uint256 amount = _calldataWord(0x24);
        LPPosition storage position = stakerLPPosition[msg.sender];
        if (block.timestamp < position.timelockEndTime) revert TimelockNotCleared(position.timelockEndTime);
        if (position.amount < amount) revert NotEnoughLPTokens(amount, position.amount);

        IERC20(LP).safeTransfer(msg.sender, amount);

        uint256 points = amount * 100 / 1e18 * position.multiplier / 100;
        position.amount -= amount;
        // Per-stake flooring can leave the position with fewer points than a single withdrawal
        // removes; mainnet clamps the position at zero but leaves the pool total unchecked.
        position.points = points > position.points ? 0 : position.points - points;
        unchecked {
            _pools[AssetType.LP].totalPoints -= points;
        }
        if (position.amount == 0) position.multiplier = 0;

        emit Withdraw(msg.sender, LP, amount);
    }

    function _claimPool(AssetType assetType, address recipient) private returns (uint256 reward, uint256 tax) {
        PoolData storage pool = _pools[assetType];
        uint256 share;
        if (pool.totalPoints != 0) {
            share = _emissionsSince(pool, lastRewardTime[recipient][assetType]) * _stakerPoints(assetType, recipient)
                / pool.totalPoints;
        }
        lastRewardTime[recipient][assetType] = block.timestamp;
        tax = share * pool.daoTax / DAO_TAX_DENOMINATOR;
        reward = share - tax;
    }

    /// Each window emits its per-second reward until the next window starts.
    function _emissionsSince(PoolData storage pool, uint256 from) private view returns (uint256 total) {
        for (uint256 i; i < pool.rewardCount; ++i) {
            uint256 start = pool.rewardWindows[i].startTime;
            uint256 end = i + 1 < pool.rewardCount ? pool.rewardWindows[i + 1].startTime : block.timestamp;
            if (start < from) start = from;
            if (end > block.timestamp) end = block.timestamp;
            if (end > start) total += (end - start) * pool.rewardWindows[i].reward;
        }
    }

    function _stakerPoints(AssetType assetType, address staker) private view returns (uint256 points) {
        if (assetType == AssetType.LP) return stakerLPPosition[staker].points;
        if (assetType == AssetType.S1_CITIZEN) {
            uint256[] storage ids = _stakerS1Position[staker];
            for (uint256 i; i < ids.length; ++i) {
                points += stakedS1[staker][ids[i]].points;
            }
        } else {
            uint256[] storage ids = _stakerS2Position[staker];
            for (uint256 i; i < ids.length; ++i) {
                points += stakedS2[staker][ids[i]].points;
            }
        }
    }

    /// Swap-and-pop: the last id takes the removed one's place, so withdrawals reorder the array.
    function _removeId(uint256[] storage ids, uint256 id) private {
        uint256 last = ids.length - 1;
        for (uint256 i; i <= last; ++i) {
            if (ids[i] == id) {
                ids[i] = ids[last];
                ids.pop();
                return;
            }
        }
    }

    function _calldataWord(uint256 offset) private pure returns (uint256) {
        return uint256(bytes32(msg.data[offset:offset + 32]));
    }
}
