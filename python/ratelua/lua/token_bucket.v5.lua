-- ratelua token_bucket v5: one or more token buckets in one key.
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
-- Every integer is canonical decimal text: '0', or an optional '-' then a
-- digit 1-9 then digits ('-0', '+1', '007', ' 1', '1e3' are refused). Bad
-- input is an error reply 'ERR ratelua: ...' naming the argument, and
-- writes nothing.
--
-- A fresh bucket is full. Tokens refill continuously: refill_amount per
-- refill_interval, exactly (tokens are kept as integers scaled by
-- refill_interval). Fresh means every bucket is full; reset_after is the time
-- until then. remaining is the whole tokens left in the emptiest bucket.
-- The executable specification is internal/model/token_bucket.go; v5
-- replies as v4 and v3 do to every call.
--
-- State with one limit (the common case): a string "<time> <deficit>" in
-- unit ms, "<time> <deficit> s" in unit s, "<time> <deficit> us" in unit
-- us, where time is the last write in the unit and deficit = (capacity -
-- tokens) * refill_interval, an integer in [0, 2 * capacity *
-- refill_interval]. The limits are not stored: every call checks them. A
-- call with other limits (same unit) carries the state over: it reads the
-- same time and deficit under its own limits, the deficit clamped to 2 *
-- capacity * refill_interval of the new limits (so a call that changes only
-- the capacity keeps the missing tokens, and one that keeps refill_amount
-- keeps the time until full, within the new bounds). A call in another unit,
-- or with another number of limits, starts fresh (the layouts differ).
--
-- State with two or more limits: v4's, a string "<limits>|<time>
-- <tokens_1> ... <tokens_n>" where <limits> is ARGV[2] and ARGV[5..] joined
-- by spaces, exactly as the call that wrote it sent them (a call with other
-- limits or another unit starts fresh; a call with the same ones need not
-- check them again), time is the last write in the unit and tokens_i =
-- tokens * refill_interval.
--
-- TTL: reset_after, so the key vanishes when every bucket is full. A now
-- earlier than the last write is treated as the time of the last write (a
-- clock behind never refills). The key must be written by this script only.
--
-- What v5 does apart from v4: one limit's state is the time and the
-- deficit, without the limits text (a smaller value, and no limits text to
-- build, find and write on each call); the call checks its three limit
-- integers inline instead (tonumber, range and one anchored find each).
-- Two or more limits: as v4. v4's and v5's states do not mix (state
-- version 5): either reads the other's one-limit state as absent.

-- ratelua v5 prelude, shared by every v5 script (generated into each
-- released file; do not edit there). In the Functions library ratelua_v5 it
-- runs once per FUNCTION LOAD, and every function uses what it defines (the
-- standard library cannot be read while a library loads, so it is read
-- inside the functions). As a script (EVALSHA) every local function here
-- is built again on every call, so the prelude holds only what most calls
-- of most scripts use; the rest lives with the script that needs it.
--
-- Integers are canonical decimal text: '0', or an optional '-' then a digit
-- 1-9 then digits. '-0', leading zeros, '+', spaces, exponents, hex and
-- fractions are refused (such text is not what '%d' writes). Numbers written to a state or passed to
-- redis.call are turned into text by string.format ('%d'), never by '..'
-- or tostring.
local MAX_TIME = 4503599627370496 -- 2^52: bound of now, durations and replies
local MAX_LIMITS = 16

-- integer returns text as a number when it is a canonical integer in
-- [lo, hi] (|lo|, |hi| <= 2^52), else nil. The text must be '0' or match
-- '-'? [1-9] digits*, which is what '%d' writes back (a find makes no
-- string; a NaN fails the pattern).
local function integer(text, lo, hi)
  local number = tonumber(text)
  if number == nil or number < lo or number > hi or (text ~= '0' and not string.find(text, '^%-?[1-9]%d*$')) then
    return nil
  end
  return number
end

-- server_now is the server's TIME in the unit.
local function server_now(unit)
  local time = redis.call('TIME')
  local seconds = tonumber(time[1])
  if unit == 's' then
    return seconds
  elseif unit == 'ms' then
    return seconds * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  return seconds * 1000000 + tonumber(time[2])
end

-- ttl_ms is the PEXPIRE of a state fresh after `duration` in the unit:
-- whole milliseconds, rounded up, within [1, 2^52], as text.
local function ttl_ms(unit, duration)
  local ms = duration
  if unit == 'us' then
    -- ceil(duration / 1000), exactly: the float quotient is floor or
    -- floor + 1.
    ms = math.floor(duration / 1000)
    if ms * 1000 > duration then
      ms = ms - 1
    end
    if ms * 1000 < duration then
      ms = ms + 1
    end
  elseif unit == 's' then
    ms = duration * 1000
  end
  if ms > MAX_TIME then
    ms = MAX_TIME
  elseif ms < 1 then
    ms = 1
  end
  return string.format('%d', ms)
end

-- rare returns the helpers of the uncommon paths, a refused call and a
-- reset: helpers.refuse and helpers.fresh below. A script (EVALSHA) builds
-- every local function of its text again on each call, and building these
-- two was a measurable part of a common call's cost; built by rare() when
-- one is needed, they cost the common call one function.
local function rare()
  local helpers = {}

  -- refuse is the error reply for a call whose KEYS, ARGV[1..4] or number
  -- of limit arguments are wrong, naming its first wrong argument; or,
  -- given i, for the bad limit argument ARGV[i]: the limit's field `name`
  -- must be an integer in `range` (in words).
  function helpers.refuse(KEYS, ARGV, group, i, name, range)
    -- quote shows an argument: at most 40 bytes, control and non-ASCII
    -- bytes escaped.
    local function quote(value)
      if type(value) ~= 'string' then
        return 'nothing'
      end
      local shown = string.gsub(string.sub(value, 1, 40), '[^ -~]', function(byte)
        return string.format('\\x%02x', string.byte(byte))
      end)
      if #value > 40 then
        shown = shown .. '...'
      end
      return "'" .. shown .. "'"
    end
    local message
    if i then
      message = 'ARGV[' .. i .. '] (limit ' .. math.floor((i - 5) / group) + 1 .. ' ' .. name
        .. ') must be a canonical integer in ' .. range .. ', got ' .. quote(ARGV[i])
    elseif #KEYS ~= 1 then
      message = 'expected exactly 1 key (the state key), got ' .. #KEYS
    elseif integer(ARGV[1], -MAX_TIME, MAX_TIME) == nil then
      message = 'ARGV[1] eventCount must be a canonical integer in [-2^52, 2^52], got ' .. quote(ARGV[1])
    elseif ARGV[2] ~= 'ms' and ARGV[2] ~= 's' and ARGV[2] ~= 'us' then
      message = "ARGV[2] unit must be 's', 'ms' or 'us', got " .. quote(ARGV[2])
    elseif ARGV[3] ~= '' and integer(ARGV[3], 0, MAX_TIME) == nil then
      message = 'ARGV[3] now must be empty (server clock) or a canonical integer in [0, 2^52], got ' .. quote(ARGV[3])
    elseif ARGV[4] ~= '0' and ARGV[4] ~= '1' then
      message = "ARGV[4] mode must be '0' (count allowed events) or '1' (count every attempt), got " .. quote(ARGV[4])
    else
      message = 'expected 1 to ' .. MAX_LIMITS .. ' limits of ' .. group .. ' integers after ARGV[4], got '
        .. math.max(#ARGV - 4, 0) .. ' arguments'
    end
    return redis.error_reply('ERR ratelua: ' .. message)
  end

  -- fresh deletes the state and replies as for a fresh key: every limit
  -- admits, and remaining is the smallest limit maximum, the first integer
  -- of each limit's group in ARGV.
  function helpers.fresh(KEYS, ARGV, group)
    redis.call('DEL', KEYS[1])
    local remaining = tonumber(ARGV[5])
    for i = 5 + group, #ARGV, group do
      local maximum = tonumber(ARGV[i])
      if maximum < remaining then
        remaining = maximum
      end
    end
    return { 1, remaining, 0, 0, 0 }
  end

  return helpers
end

-- limits_error checks the n limits in ARGV: the error reply for the first
-- bad one, or nil when every limit is valid.
local function limits_error(KEYS, ARGV, n)
  for i = 5, 2 + 3 * n, 3 do
    if integer(ARGV[i], 1, 1000000000) == nil then
      return rare().refuse(KEYS, ARGV, 3, i, 'capacity', '[1, 10^9]')
    elseif integer(ARGV[i + 1], 1, 1000000000) == nil then
      return rare().refuse(KEYS, ARGV, 3, i + 1, 'refill_amount', '[1, 10^9]')
    elseif integer(ARGV[i + 2], 1, MAX_TIME) == nil then
      return rare().refuse(KEYS, ARGV, 3, i + 2, 'refill_interval', '[1, 2^52]')
    end
  end
  for i = 5, 2 + 3 * n, 3 do
    local capacity, interval = tonumber(ARGV[i]), tonumber(ARGV[i + 2])
    if capacity * interval > 1125899906842624 then
      return redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3 .. ': capacity * refill_interval must be at most 2^50, got '
        .. string.format('%d * %d', capacity, interval))
    end
  end
  return nil
end

-- #call: what follows runs on every call (in ratelua_v5, the function body)
local tonumber, floor, format = tonumber, math.floor, string.format
local unit, now, mode = ARGV[2], false, ARGV[4]
local count = 1
if ARGV[1] ~= '1' then
  count = integer(ARGV[1], -MAX_TIME, MAX_TIME)
end
if ARGV[3] ~= '' then
  -- Canonical: what '%d' writes back (in range, a number's '%d' text is
  -- interned already when it is ARGV[3], so the compare is cheap).
  now = tonumber(ARGV[3])
  if not (now and now >= 0 and now <= MAX_TIME and format('%d', now) == ARGV[3]) then
    now = nil
  end
end
local n = (#ARGV - 4) / 3
if count == nil or now == nil or #KEYS ~= 1 or (unit ~= 'ms' and unit ~= 's' and unit ~= 'us')
  or (mode ~= '0' and mode ~= '1') or (n ~= 1 and (n < 1 or n > MAX_LIMITS or n % 1 ~= 0)) then
  return rare().refuse(KEYS, ARGV, 3)
end
local key = KEYS[1]
if count < 0 then
  return limits_error(KEYS, ARGV, n) or rare().fresh(KEYS, ARGV, 3)
end

if n == 1 then
  -- One bucket: the state is "<time> <deficit>" (plus " s" or " us" in
  -- those units). The limits are checked on every call.
  local capacity, amount, interval = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
  if not (capacity and amount and interval and capacity >= 1 and capacity <= 1000000000
      and amount >= 1 and amount <= 1000000000 and interval >= 1 and capacity * interval <= 1125899906842624
      and format('%d', capacity) == ARGV[5] and format('%d', amount) == ARGV[6]
      and format('%d', interval) == ARGV[7]) then
    return limits_error(KEYS, ARGV, 1)
  end
  local pattern, layout = '^(%d+) (%d+)$', '%d %d'
  if unit == 's' then
    pattern, layout = '^(%d+) (%d+) s$', '%d %d s'
  elseif unit == 'us' then
    pattern, layout = '^(%d+) (%d+) us$', '%d %d us'
  end
  local state = redis.call('GET', key)
  local full = capacity * interval
  local last, level
  if state then
    local time, deficit = string.match(state, pattern)
    if time then
      last, level = tonumber(time), full - tonumber(deficit)
      if level < -full then
        level = -full
      end
    end
  end
  now = now or server_now(unit)
  local stamp = now
  if last == nil then
    level = full
  else
    if last > now then
      stamp = last
    end
    -- Full again once (stamp - last) * amount >= full - level; a product
    -- past 2^53 is rounded, but stays above full - level <= 2^51.
    local refill = (stamp - last) * amount
    if refill >= full - level then
      level = full
    else
      level = level + refill
    end
  end
  local asked = count
  if asked < 1 then
    asked = 1
  end
  local allowed = asked <= capacity and level >= asked * interval
  if count > 0 and (allowed or mode == '1') then
    -- Taking more than 2 * capacity always ends at the floor.
    local taken = count
    if taken > 2 * capacity then
      taken = 2 * capacity
    end
    level = level - taken * interval
    if level < -full then
      level = -full
    end
  end
  local remaining, reset_after = 0, 0
  if level > 0 then
    remaining = floor(level / interval)
  end
  if level < full then
    reset_after = stamp - floor((level - full) / amount) - now
    if reset_after > MAX_TIME then
      reset_after = MAX_TIME
    end
  end
  if count > 0 and (allowed or mode == '1') then
    -- ttl_ms inline for ms (a call less).
    local ttl = reset_after
    if unit ~= 'ms' then
      ttl = ttl_ms(unit, reset_after)
    elseif ttl < 1 then
      ttl = '1'
    else
      ttl = format('%d', ttl)
    end
    redis.call('SET', key, format(layout, stamp, full - level), 'PX', ttl)
  end
  if allowed then
    return { 1, remaining, 0, reset_after, 1 }
  end
  local retry = -1
  if asked <= capacity then
    retry = stamp - floor((level - asked * interval) / amount) - now
    if retry > MAX_TIME then
      retry = MAX_TIME
    elseif retry < 0 then
      retry = 0
    end
  end
  return { 0, remaining, retry, reset_after, 1 }
end

-- Two or more buckets. The state counts only if it was written for these limits, which were
-- checked then. lim[4i-3 .. 4i]: limit i's capacity, refill_amount,
-- refill_interval and tokens * refill_interval (as stored, then at stamp).
local limits = unit .. ' ' .. table.concat(ARGV, ' ', 5)
local state = redis.call('GET', key)
local lim = {}
local last = nil
if state then
  local stored, time, at
  stored, time, at = string.match(state, '^([^|]*)|(%d+)()')
  for i = 4, 4 * n, 4 do
    if at then
      lim[i], at = string.match(state, '^ (%-?%d+)()', at)
    end
  end
  if at ~= #state + 1 then
    stored = nil
  end
  if stored == limits then
    last = tonumber(time)
  end
end
if last == nil then
  local bad = limits_error(KEYS, ARGV, n)
  if bad then
    return bad
  end
end
now = now or server_now(unit)
local stamp = now
if last and last > now then
  stamp = last
end

-- The buckets at stamp, and the decision. Every quotient below is of
-- integers under 2^52 in magnitude, so math.floor of the division is exact.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for i = 4, 4 * n, 4 do
  local arg = 3 * i / 4 + 2
  local capacity, amount, interval = tonumber(ARGV[arg]), tonumber(ARGV[arg + 1]), tonumber(ARGV[arg + 2])
  local full = capacity * interval
  local level = full
  if last then
    level = tonumber(lim[i])
    if level > full then
      level = full
    end
    -- Full again after ceil((full - level) / amount).
    if stamp - last >= -floor((level - full) / amount) then
      level = full
    else
      level = level + (stamp - last) * amount
    end
  end
  lim[i - 3], lim[i - 2], lim[i - 1], lim[i] = capacity, amount, interval, level
  if asked > capacity or level < asked * interval then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')

-- Take the tokens and reply from the state after this call: when allowed,
-- the limit with the fewest remaining decides; when denied, the one with
-- the longest retry (never first); ties go to the lower index.
local remaining, retry, reset_after, index = nil, 0, 0, 1
for i = 4, 4 * n, 4 do
  local capacity, amount, interval, level = lim[i - 3], lim[i - 2], lim[i - 1], lim[i]
  local full = capacity * interval
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
    lim[i] = level
  end
  local left = 0
  if level > 0 then
    left = floor(level / interval)
  end
  if remaining == nil or left < remaining then
    remaining = left
    if allowed then
      index = i / 4
    end
  end
  if level < full then
    local reset = math.max(0, math.min(MAX_TIME, stamp - floor((level - full) / amount) - now))
    if reset > reset_after then
      reset_after = reset
    end
  end
  if not allowed and retry ~= -1 then
    local need = asked * interval
    if asked > capacity then
      retry, index = -1, i / 4
    elseif level < need then
      local wait = math.max(0, math.min(MAX_TIME, stamp - floor((level - need) / amount) - now))
      if wait > retry then
        retry, index = wait, i / 4
      end
    end
  end
end
if record then
  local tokens = {}
  for i = 1, n do
    tokens[i] = lim[4 * i]
  end
  state = format('%s|%d' .. string.rep(' %d', n), limits, stamp, unpack(tokens, 1, n))
  redis.call('SET', key, state, 'PX', ttl_ms(unit, reset_after))
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
