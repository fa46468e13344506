-- ratelua token_bucket v1: one or more token buckets in one key.
--
-- KEYS[1]  the state key (the only key read or written)
-- ARGV[1]  eventCount: > 0 take that many tokens from every bucket and
--          decide; 0 decide whether one token could be taken (writes
--          nothing); < 0 delete the state and reply as for a fresh key
-- ARGV[2]  unit of now and of every duration: 's', 'ms' or 'us'
-- ARGV[3]  now in that unit, or '' for the server clock (TIME)
-- ARGV[4]  mode: '0' a denied call takes nothing from any bucket;
--          '1' every call takes its tokens, and a bucket may go down to
--          -capacity (a caller that keeps hammering stays blocked)
-- ARGV[5..] 1 to 16 limits of three integers:
--          capacity         tokens in a full bucket, 1..10^9
--          refill_amount    tokens added per refill_interval, 1..10^9
--          refill_interval  in the unit, 1..2^52;
--                           capacity * refill_interval <= 2^50
-- reply    {allowed, remaining, retry_after, reset_after, limit_index}
--
-- A fresh bucket is full. Tokens refill continuously: refill_amount per
-- refill_interval, exactly (tokens are kept as integers scaled by
-- refill_interval). Fresh means every bucket is full; reset_after is the time
-- until then. remaining is the whole tokens left in the emptiest bucket.
--
-- State: a string "<time> <signature> <tokens_1> ... <tokens_n>" where time
-- is the last write in the unit, signature the first 8 hex digits of the
-- SHA1 of the unit and limits (other limits on the same key start fresh),
-- and tokens_i = tokens * refill_interval. TTL: reset_after, so the key
-- vanishes when every bucket is full. A now earlier than the last write is
-- treated as the time of the last write (a clock behind never refills).
-- Cost: GET and SET (plus TIME for the server clock).

-- #include _prelude.v1.lua

local function main()
  local call, err = parse_call({
    { 'capacity', 1, 1000000000, '[1, 10^9]' },
    { 'refill_amount', 1, 1000000000, '[1, 10^9]' },
    { 'refill_interval', 1, MAX_TIME, '[1, 2^52]' },
  })
  if call == nil then
    return err
  end
  local limits = call.limits
  for i = 1, #limits do
    local limit = limits[i]
    if limit.capacity * limit.refill_interval > 1125899906842624 then
      return fail('limit ' .. i .. ': capacity * refill_interval must be at most 2^50, got '
        .. int_str(limit.capacity) .. ' * ' .. int_str(limit.refill_interval))
    end
    limit.full = limit.capacity * limit.refill_interval
  end
  if call.count < 0 then
    redis.call('DEL', call.key)
    return fresh_reply(call, 'capacity')
  end
  local now = clock(call)

  -- Read the buckets at the effective time.
  local last, stored = read_state(call, redis.call('GET', call.key), #limits)
  local stamp = effective(now, last)
  local tokens = {}
  for i = 1, #limits do
    local limit = limits[i]
    local level = limit.full
    if last ~= nil then
      level = math.min(stored[i], limit.full)
      if stamp - last >= ceil_div(limit.full - level, limit.refill_amount) then
        level = limit.full
      else
        level = level + (stamp - last) * limit.refill_amount
      end
    end
    tokens[i] = level
  end

  -- Decide.
  local count = call.count
  local asked = math.max(count, 1)
  local allowed = true
  for i = 1, #limits do
    local limit = limits[i]
    if asked > limit.capacity or tokens[i] < asked * limit.refill_interval then
      allowed = false
    end
  end
  local record = count > 0 and (allowed or call.mode == '1')
  if record then
    for i = 1, #limits do
      local limit = limits[i]
      -- Taking more than 2 * capacity always ends at the floor.
      local taken = math.min(count, 2 * limit.capacity) * limit.refill_interval
      tokens[i] = math.max(tokens[i] - taken, -limit.full)
    end
  end

  -- Reply from the state after this call.
  local outcomes = {}
  local reset_after = 0
  for i = 1, #limits do
    local limit = limits[i]
    local level = tokens[i]
    local remaining = 0
    if level > 0 then
      remaining = floor_div(level, limit.refill_interval)
    end
    local need = asked * limit.refill_interval
    local retry = 0
    if asked > limit.capacity then
      retry = -1
    elseif level < need then
      retry = cap(stamp + ceil_div(need - level, limit.refill_amount) - now)
    end
    local reset = 0
    if level < limit.full then
      reset = cap(stamp + ceil_div(limit.full - level, limit.refill_amount) - now)
    end
    if reset > reset_after then
      reset_after = reset
    end
    outcomes[i] = { remaining, retry, reset }
  end
  if record then
    local values = {}
    for i = 1, #limits do
      values[i] = int_str(tokens[i])
    end
    redis.call('SET', call.key, state_string(call, stamp, values), 'PX', ttl_ms(call, reset_after))
  end
  return decide(allowed, outcomes)
end

return main()
