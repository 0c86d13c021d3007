-- The one home of the staked-citizen rule: extends staked_citizens_history over the blocks
-- (after_block, to_block] from the events in them and each citizen's state at after_block. A
-- citizen is staked while its latest citizen Stake has no later Withdraw; its points are the
-- stake's frozen base plus the bonus of every BYTES deposit its staker made into it since. Each
-- block with events of a citizen ends its previous state and starts the one after the block's
-- last event. It reads only the range's events and one row per citizen they touch, so its cost
-- is the range's, never the history's. The caller keeps the precondition: no state of these
-- citizens starts after after_block (a rollback truncates first).
CREATE OR REPLACE FUNCTION "project_staked_citizens"("after_block" bigint, "to_block" bigint)
RETURNS void LANGUAGE sql AS $$
  update staked_citizens_history h set valid_to = f.first_block
  from (
    select citizen_season as season, citizen_id, min(block_number) as first_block
    from staker_events
    where block_number > after_block and block_number <= to_block and citizen_id is not null
    group by citizen_season, citizen_id
  ) f
  where h.season = f.season and h.citizen_id = f.citizen_id and h.valid_to is null;

  with events as (
    select e.citizen_season as season, e.citizen_id, e.block_number, e.log_index, e.account,
      e.amount_or_token_id as amount,
      e.event = 'Stake' and e.asset_type in ('s1_citizen', 's2_citizen') as citizen_stake,
      e.event = 'Withdraw' and e.asset_type in ('s1_citizen', 's2_citizen') as citizen_withdraw,
      e.event = 'Stake' and e.asset_type = 'bytes' as bytes_stake
    from staker_events e
    where e.block_number > after_block and e.block_number <= to_block and e.citizen_id is not null
  ),
  -- Stake group 0 is the stake held at after_block (if any); each citizen Stake starts the next.
  grouped as (
    select ev.*, count(*) filter (where citizen_stake) over (
      partition by season, citizen_id order by block_number, log_index) as stake_group
    from events ev
  ),
  held as (
    select g.*,
      case when g.stake_group = 0 then p.staker
        else first_value(g.account) over running end as staker,
      case when g.stake_group = 0 then p.stake_block_number
        else first_value(g.block_number) over running end as stake_block_number,
      case when g.stake_group = 0 then p.stake_log_index
        else first_value(g.log_index) over running end as stake_log_index,
      case when g.stake_group = 0 then p.staked_bytes else 0 end as bytes_before,
      case when g.stake_group = 0 then p.bytes_points else 0 end as points_before,
      bool_or(g.citizen_withdraw) over running as withdrawn
    from grouped g
    left join lateral (
      select h.* from staked_citizens_history h
      where h.season = g.season and h.citizen_id = g.citizen_id and h.valid_from <= after_block
      order by h.valid_from desc limit 1
    ) p on p.valid_to > after_block
    window running as (
      partition by g.season, g.citizen_id, g.stake_group order by g.block_number, g.log_index)
  ),
  states as (
    select h.season, h.citizen_id, h.block_number, h.staker, h.stake_block_number,
      h.stake_log_index, h.withdrawn,
      h.bytes_before + coalesce(sum(h.amount) filter (
        where h.bytes_stake and h.account = h.staker) over running, 0) as staked_bytes,
      h.points_before + coalesce(sum(div(h.amount * 100, 200000000000000000000)) filter (
        where h.bytes_stake and h.account = h.staker) over running, 0) as bytes_points,
      row_number() over (
        partition by h.season, h.citizen_id, h.block_number order by h.log_index desc) as from_last
    from held h
    window running as (
      partition by h.season, h.citizen_id, h.stake_group order by h.block_number, h.log_index)
  ),
  after_blocks as (
    select s.*, lead(s.block_number) over (
      partition by s.season, s.citizen_id order by s.block_number) as next_block
    from states s where s.from_last = 1
  )
  insert into staked_citizens_history (season, citizen_id, valid_from, valid_to, staker,
    stake_block_number, stake_log_index, staked_bytes, bytes_points)
  select season, citizen_id, block_number, next_block, staker, stake_block_number,
    stake_log_index, staked_bytes, bytes_points
  from after_blocks
  where staker is not null and not withdrawn;
$$;--> statement-breakpoint
COMMENT ON FUNCTION "project_staked_citizens"(bigint, bigint) IS 'The staked-citizen rule: extends staked_citizens_history over blocks (after_block, to_block] from their events. The indexer calls it; analysts read staked_citizens_at.';
