-- ratelua token_bucket v2: one or more token buckets in one key. Same
-- contract, replies and semantics as v1 (see token_bucket.v1.lua), at a
-- lower cost; its state is not v1's (the signature is v2's).
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
-- is the last write in the unit, signature a number folded from the unit and
-- the limits (other limits on the same key start fresh), and tokens_i =
-- tokens * refill_interval. TTL: reset_after, so the key vanishes when every
-- bucket is full. A now earlier than the last write is treated as the time
-- of the last write (a clock behind never refills).
-- Cost: GET and SET (plus TIME for the server clock).

-- #include _prelude.v2.lua

local count, unit, now, mode, n, sig = header(3)
if count == nil then
  return unit
end
-- lim[3i-2], lim[3i-1], lim[3i]: capacity, refill_amount, refill_interval
-- of limit i; lim[3n+i]: its tokens.
local lim = { 0, 0, 0, 0 } -- sized for one limit: growing a table costs
for i = 5, 4 + 3 * n, 3 do
  local capacity = int(i, 1, 1000000000)
  if capacity == nil then
    return limit_error(i, 3, 'capacity', '[1, 10^9]')
  end
  local amount = int(i + 1, 1, 1000000000)
  if amount == nil then
    return limit_error(i + 1, 3, 'refill_amount', '[1, 10^9]')
  end
  local interval = int(i + 2, 1, MAX_TIME)
  if interval == nil then
    return limit_error(i + 2, 3, 'refill_interval', '[1, 2^52]')
  end
  lim[i - 4], lim[i - 3], lim[i - 2] = capacity, amount, interval
  sig = ((sig * 31 + capacity) % 4294967291 * 31 + amount) % 4294967291
  sig = (sig * 31 + interval) % 4294967291
end
for i = 1, n do
  local capacity, interval = lim[3 * i - 2], lim[3 * i]
  if capacity * interval > 1125899906842624 then
    return fail('limit ' .. i .. ': capacity * refill_interval must be at most 2^50, got '
      .. string.format('%d * %d', capacity, interval))
  end
end
local key = KEYS[1]
if count < 0 then
  return reset(lim, 3, n)
end
now = now or server_now(unit)

-- Read the buckets: the state counts only if it was written for these
-- limits.
local last = read_values(redis.call('GET', key), sig, lim, 3 * n, n)
local stamp = now
if last ~= nil and last > now then
  stamp = last
end

-- The buckets at stamp, and the decision.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for i = 1, n do
  local capacity, amount, interval = lim[3 * i - 2], lim[3 * i - 1], lim[3 * i]
  local full = capacity * interval
  local level = full
  if last ~= nil then
    level = lim[3 * n + i]
    if level > full then
      level = full
    end
    if stamp - last >= -floor_div(level - full, amount) then
      level = full
    else
      level = level + (stamp - last) * amount
    end
  end
  lim[3 * n + i] = level
  if asked > capacity or level < asked * interval then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')

-- Take the tokens and reply from the state after this call: when allowed,
-- the limit with the fewest remaining decides; when denied, the one with
-- the longest retry (never first); ties go to the lower index.
local remaining, retry, reset_after, index = nil, 0, 0, 1
for i = 1, n do
  local capacity, amount, interval = lim[3 * i - 2], lim[3 * i - 1], lim[3 * i]
  local full = capacity * interval
  local level = lim[3 * n + i]
  if record then
    -- Taking more than 2 * capacity always ends at the floor.
    local taken = count
    if taken > 2 * capacity then
      taken = 2 * capacity
    end
    level = level - taken * interval
    if level < -full then
      level = -full
    end
    lim[3 * n + i] = level
  end
  local left = 0
  if level > 0 then
    left = floor_div(level, interval)
  end
  if remaining == nil or left < remaining then
    remaining = left
    if allowed then
      index = i
    end
  end
  if level < full then
    local reset = cap(stamp + -floor_div(level - full, amount) - now)
    if reset > reset_after then
      reset_after = reset
    end
  end
  if not allowed and retry ~= -1 then
    local need = asked * interval
    if asked > capacity then
      retry, index = -1, i
    elseif level < need then
      local wait = cap(stamp + -floor_div(level - need, amount) - now)
      if wait > retry then
        retry, index = wait, i
      end
    end
  end
end
if record then
  local state = string.format('%d %d' .. string.rep(' %d', n), stamp, sig, unpack(lim, 3 * n + 1, 4 * n))
  redis.call('SET', key, state, 'PX', string.format('%d', ttl_ms(unit, reset_after)))
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
