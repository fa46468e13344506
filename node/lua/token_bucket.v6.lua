-- ratelua token_bucket v6: one or more token buckets in one key.
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
-- The executable specification is internal/model/token_bucket.go.
--
-- State with one limit (the common case): one integer X = t *
-- refill_amount + deficit, written with '%d' (Redis keeps it as an
-- integer, no string), where t is the call's now and deficit = (capacity -
-- tokens) * refill_interval, in [0, 2 * capacity * refill_interval]. At a
-- later now the deficit is X - now * refill_amount, clamped to [0, 2 *
-- capacity * refill_interval] (X / refill_amount is the time the bucket is
-- full again). X is exact only below 2^53: when X would not be (e.g. unit
-- us with a refill_amount above 5), the state is the text "<t> <deficit>"
-- instead, read as the same line. The unit is not stored and must not
-- change for a key. The limits are not stored either: every call checks
-- them, and they must not change for a key. (A call with other limits
-- reads the deficit as X - now * refill_amount under its own refill_amount
-- and clamps it to its own 2 * capacity * refill_interval: with the same
-- refill_amount the time until full carries over, and with the same
-- refill_interval too the missing tokens; with another refill_amount, at
-- times far from 0, the bucket reads as full when it is larger and as
-- -capacity when it is smaller.) A call with another number of limits
-- starts fresh (the layouts differ).
--
-- State with two or more limits: v4's, a string "<limits>|<time>
-- <tokens_1> ... <tokens_n>" where <limits> is ARGV[2] and ARGV[5..] joined
-- by spaces, exactly as the call that wrote it sent them (a call with other
-- limits or another unit starts fresh; a call with the same ones need not
-- check them again), time is the last write in the unit and tokens_i =
-- tokens * refill_interval.
--
-- TTL: reset_after, so the key vanishes when every bucket is full. With
-- two or more limits, a now earlier than the last write is treated as the
-- time of the last write (a clock behind never refills). With one limit it
-- is not: the deficit counts from the caller's now, so a clock behind the
-- last write finds the bucket emptier (by the refill of the time behind,
-- down to -capacity), which can only deny earlier, never admit more: X
-- never decreases, and a call that reads the deficit above 2 * capacity *
-- refill_interval (only a clock far behind does) records nothing, even in
-- mode '1'. The key must be written by this script only.
--
-- What v6 does apart from v5: one limit's state is one integer (above)
-- instead of v5's "<time> <deficit>" text with a unit suffix, so a now
-- earlier than the last write counts from now for one limit, and the unit
-- and the limits must not change for a key; the prelude's helpers are
-- macros expanded in place and the script builds no function on a
-- decision's path; one limit's integers are checked by anchored finds and
-- read by arithmetic, and the server clock too (no tonumber, format or
-- math.floor call but the two formats of the write). Two or more limits:
-- as v5. v5's and v6's states do not mix (state version 6).

-- ratelua v6 prelude, shared by every v6 script (generated into each
-- released file; do not edit there). It holds two constants and macros
-- (-- #define ... -- #end, see internal/luagen/macro.go): a script expands
-- a macro where it needs its code, so a script run by EVALSHA builds no
-- function on its common path (v5's prelude built four closures on every
-- call). In the Functions library ratelua_v6 the constants are set once
-- per FUNCTION LOAD.
--
-- Integers are canonical decimal text: '0', or an optional '-' then a digit
-- 1-9 then digits. '-0', leading zeros, '+', spaces, exponents, hex and
-- fractions are refused (such text is not what '%d' writes). Numbers written to a state or passed to
-- redis.call are turned into text by string.format ('%d'), never by '..'
-- or tostring.
local MAX_TIME = 4503599627370496 -- 2^52: bound of now, durations and replies
local MAX_LIMITS = 16

-- #call: what follows runs on every call (in ratelua_v6, the function body)
local tonumber, floor, format, find = tonumber, math.floor, string.format, string.find
local unit, now, mode = ARGV[2], false, ARGV[4]
local count = 1
if ARGV[1] ~= '1' then
  count = tonumber(ARGV[1])
  if count == nil or count < -MAX_TIME or count > MAX_TIME or (ARGV[1] ~= '0' and not string.find(ARGV[1], '^%-?[1-9]%d*$')) then
    count = nil
  end
end
if ARGV[3] ~= '' then
  -- Canonical: '0' or an anchored find of the digits, then read by
  -- arithmetic (no tonumber call). A call of fewer than 3 arguments has
  -- no ARGV[3]: it is refused below, naming the first one missing.
  now = ARGV[3]
  if now == '0' or (now and find(now, '^[1-9]%d*$')) then
    now = now + 0
    if now > MAX_TIME then
      now = nil
    end
  else
    now = nil
  end
end
local n = (#ARGV - 4) / 3
if count == nil or now == nil or #KEYS ~= 1 or (unit ~= 'ms' and unit ~= 's' and unit ~= 'us')
  or (mode ~= '0' and mode ~= '1') or (n ~= 1 and (n < 1 or n > MAX_LIMITS or n % 1 ~= 0)) then
  local helpers = {}

  -- helpers.integer returns text as a number when it is a canonical integer
  -- in [lo, hi], else nil (the macro integer as a function).
  function helpers.integer(text, lo, hi)
    local number = tonumber(text)
    if number == nil or number < lo or number > hi or (text ~= '0' and not string.find(text, '^%-?[1-9]%d*$')) then
      return nil
    end
    return number
  end
  local integer = helpers.integer

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
  return helpers.refuse(KEYS, ARGV, 3)
end
local key = KEYS[1]

if n == 1 and count >= 0 then
  -- One bucket, its limits checked here on every call: canonical positive
  -- integers by an anchored find (no string made), then read by
  -- arithmetic, which takes digits as a number (no tonumber call).
  -- refill_interval <= 2^52 follows from capacity >= 1 and the product's
  -- bound. A bad limit is named below.
  local capacity, amount, interval = ARGV[5], ARGV[6], ARGV[7]
  if find(capacity, '^[1-9]%d*$') and find(amount, '^[1-9]%d*$') and find(interval, '^[1-9]%d*$') then
    capacity, amount, interval = capacity + 0, amount + 0, interval + 0
  else
    capacity = nil
  end
  if capacity and capacity <= 1000000000 and amount <= 1000000000 and capacity * interval <= 1125899906842624 then
    local state = redis.pcall('GET', key)
    if type(state) == 'table' and state.err then
      return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than ' .. 'token_bucket'
        .. ' state (another script\'s state?): ' .. state.err)
    end
    local server = not now
    if server then
      do
        local time = redis.call('TIME')
        if unit == 'ms' then
          local micros = time[2] + 0
          now = time[1] * 1000 + (micros - micros % 1000) / 1000
        elseif unit == 's' then
          now = time[1] + 0
        else
          now = time[1] * 1000000 + time[2]
        end
      end
    end
    -- level = tokens * interval, in [-full, full].
    local full = capacity * interval
    local level, beyond = full, false
    if state then
      -- The deficit at now: X - now * amount, or from "<t> <deficit>". A
      -- product past 2^53 is rounded, but then the difference is far
      -- outside [0, 2 * full] on the same side, and clamped.
      local deficit
      deficit = tonumber(state)
      if deficit then
        deficit = deficit - now * amount
      else
        local deficit_time, deficit_behind = string.match(state, '^(%d+) (%d+)$')
        deficit = 0
        if deficit_time then
          deficit = tonumber(deficit_behind) + (tonumber(deficit_time) - now) * amount
        end
      end
      if deficit > 2 * full then
        -- Below the floor: only a now behind the last write (or other
        -- limits) reads so. The bucket is at -capacity, and the call
        -- records nothing: a write would move X back, refilling the
        -- bucket for a caller whose clock is right.
        level, beyond = -full, true
        if deficit > 3 * full then
          -- Stale (rarely): the bucket is full again more than three
          -- refill horizons (full / amount: an empty bucket's refill)
          -- after now, so the last write lies more than one horizon
          -- ahead of now (its deficit is at most 2 * full). For a
          -- caller's clock, the server's TIME must read so too. A stale
          -- state was written by a clock far ahead: deleted, and the call
          -- counts from a full bucket.
          local gone = true
          if not server then
            local clock_now, clock_deficit
            do
              local time = redis.call('TIME')
              if unit == 'ms' then
                local micros = time[2] + 0
                clock_now = time[1] * 1000 + (micros - micros % 1000) / 1000
              elseif unit == 's' then
                clock_now = time[1] + 0
              else
                clock_now = time[1] * 1000000 + time[2]
              end
            end
            clock_deficit = tonumber(state)
            if clock_deficit then
              clock_deficit = clock_deficit - clock_now * amount
            else
              local deficit_time, deficit_behind = string.match(state, '^(%d+) (%d+)$')
              clock_deficit = 0
              if deficit_time then
                clock_deficit = tonumber(deficit_behind) + (tonumber(deficit_time) - clock_now) * amount
              end
            end
            gone = clock_deficit > 3 * full
          end
          if gone then
            redis.call('DEL', key)
            level, beyond = full, false
          end
        end
      elseif deficit > 0 then
        level = full - deficit
      end
    end
    local asked = count
    if asked < 1 then
      asked = 1
    end
    local allowed = asked <= capacity and level >= asked * interval
    local record = count > 0 and (allowed or mode == '1') and not beyond
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
    end
    -- remaining is floor(level / interval), and the bucket is full again
    -- after ceil((full - level) / amount) <= 2^51, each a multiple of the
    -- divisor (found by %, exact for integers under 2^52) divided by it,
    -- with no math.floor call.
    local remaining, reset_after = 0, 0
    if level > 0 then
      remaining = (level - level % interval) / interval
    end
    if level < full then
      reset_after = (full - level + (level - full) % amount) / amount
    end
    if record then
      local ttl = reset_after
      if unit ~= 'ms' then
        do
          local ms = reset_after
          if unit == 'us' then
            -- ceil(reset_after / 1000), exactly: the float quotient is floor or
            -- floor + 1.
            ms = math.floor(reset_after / 1000)
            if ms * 1000 > reset_after then
              ms = ms - 1
            end
            if ms * 1000 < reset_after then
              ms = ms + 1
            end
          elseif unit == 's' then
            ms = reset_after * 1000
          end
          if ms > MAX_TIME then
            ms = MAX_TIME
          elseif ms < 1 then
            ms = 1
          end
          ttl = string.format('%d', ms)
        end
      elseif ttl < 1 then
        ttl = '1'
      else
        ttl = format('%d', ttl)
      end
      local deficit = full - level
      local x = now * amount + deficit
      if x < 9007199254740992 then
        redis.call('SET', key, format('%d', x), 'PX', ttl)
      else
        redis.call('SET', key, format('%d %d', now, deficit), 'PX', ttl)
      end
    end
    if allowed then
      return { 1, remaining, 0, reset_after, 1 }
    elseif asked > capacity then
      return { 0, remaining, -1, reset_after, 1 }
    end
    -- Denied for want of tokens: level < asked * interval, so the wait is
    -- ceil((asked * interval - level) / amount) >= 1.
    local need = asked * interval - level
    return { 0, remaining, (need + (-need) % amount) / amount, reset_after, 1 }
  end
end

-- A reset, a bad limit, or two or more buckets. The state of two or more
-- counts only if it was written for these limits, which were checked
-- then. lim[4i-3 .. 4i]: limit i's capacity, refill_amount,
-- refill_interval and tokens * refill_interval (as stored, then at stamp).
local limits, lim, last = nil, {}, nil
if count >= 0 and n ~= 1 then
  limits = unit .. ' ' .. table.concat(ARGV, ' ', 5)
  local state = redis.pcall('GET', key)
  if type(state) == 'table' and state.err then
    return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than ' .. 'token_bucket'
      .. ' state (another script\'s state?): ' .. state.err)
  end
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
end
if last == nil then
  local helpers = {}

  -- helpers.integer returns text as a number when it is a canonical integer
  -- in [lo, hi], else nil (the macro integer as a function).
  function helpers.integer(text, lo, hi)
    local number = tonumber(text)
    if number == nil or number < lo or number > hi or (text ~= '0' and not string.find(text, '^%-?[1-9]%d*$')) then
      return nil
    end
    return number
  end
  local integer = helpers.integer

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
  local bad
  bad = nil
  for i = 5, 2 + 3 * n, 3 do
    if helpers.integer(ARGV[i], 1, 1000000000) == nil then
      bad = helpers.refuse(KEYS, ARGV, 3, i, 'capacity', '[1, 10^9]')
    elseif helpers.integer(ARGV[i + 1], 1, 1000000000) == nil then
      bad = helpers.refuse(KEYS, ARGV, 3, i + 1, 'refill_amount', '[1, 10^9]')
    elseif helpers.integer(ARGV[i + 2], 1, MAX_TIME) == nil then
      bad = helpers.refuse(KEYS, ARGV, 3, i + 2, 'refill_interval', '[1, 2^52]')
    end
    if bad then
      break
    end
  end
  if bad == nil then
    for i = 5, 2 + 3 * n, 3 do
      local capacity, interval = tonumber(ARGV[i]), tonumber(ARGV[i + 2])
      if capacity * interval > 1125899906842624 then
        bad = redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3 .. ': capacity * refill_interval must be at most 2^50, got '
          .. string.format('%d * %d', capacity, interval))
        break
      end
    end
  end
  if bad then
    return bad
  elseif count < 0 then
    return helpers.fresh(KEYS, ARGV, 3)
  elseif n == 1 then
    -- Not reached: one limit that passes these checks passed the ones
    -- above.
    return redis.error_reply('ERR ratelua: internal error: limit 1 checked twice')
  end
end
local server = not now
if server then
  do
    local time = redis.call('TIME')
    if unit == 's' then
      now = tonumber(time[1])
    elseif unit == 'ms' then
      now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    else
      now = tonumber(time[1]) * 1000000 + tonumber(time[2])
    end
  end
end
if last and last > now then
  -- A clock behind the last write (rarely). The state is stale when its
  -- last write lies more than the widest refill horizon (the longest
  -- ceil(capacity * refill_interval / refill_amount), an empty bucket's
  -- refill) ahead of now and, for a caller's clock, of the server's TIME:
  -- written by a clock far ahead, it is deleted and the call counts from
  -- full buckets.
  local widest = 0
  for i = 5, #ARGV, 3 do
    local full, amount = tonumber(ARGV[i]) * tonumber(ARGV[i + 2]), tonumber(ARGV[i + 1])
    local horizon = (full + (-full) % amount) / amount
    if horizon > widest then
      widest = horizon
    end
  end
  local gone
  gone = false
  if last > now + widest then
    gone = true
    if not server then
      -- The server's TIME in unit, as server_now (macros do not nest).
      local stale_time = redis.call('TIME')
      local stale_clock = tonumber(stale_time[1]) * 1000000 + tonumber(stale_time[2])
      if unit == 's' then
        stale_clock = tonumber(stale_time[1])
      elseif unit == 'ms' then
        stale_clock = tonumber(stale_time[1]) * 1000 + math.floor(tonumber(stale_time[2]) / 1000)
      end
      gone = last > stale_clock + widest
    end
  end
  if gone then
    redis.call('DEL', key)
    last = nil
  end
end
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
  local ttl
  do
    local ms = reset_after
    if unit == 'us' then
      -- ceil(reset_after / 1000), exactly: the float quotient is floor or
      -- floor + 1.
      ms = math.floor(reset_after / 1000)
      if ms * 1000 > reset_after then
        ms = ms - 1
      end
      if ms * 1000 < reset_after then
        ms = ms + 1
      end
    elseif unit == 's' then
      ms = reset_after * 1000
    end
    if ms > MAX_TIME then
      ms = MAX_TIME
    elseif ms < 1 then
      ms = 1
    end
    ttl = string.format('%d', ms)
  end
  redis.call('SET', key, format('%s|%d' .. string.rep(' %d', n), limits, stamp, unpack(tokens, 1, n)), 'PX', ttl)
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
