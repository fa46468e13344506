#!lua name=ratelua_v6
-- Generated from lua/src by luagen: every v6 script as a function with
-- the same KEYS/ARGV/reply contract (FCALL <function> 1 <key> <ARGV...>).
-- The shared prelude and each script's helpers run once per FUNCTION LOAD;
-- a function's body is its script's text after the script's '-- #call' line.

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


-- ar1 v6 (lua/ar1.v6.lua)
do
local EPSILON = 0.001
-- ONE_INTEGER is 2^20: a one-limit state '<boundary> * 2^20 + <count>' is
-- one integer below 2^53 (boundary < 2^33, a whole count < 2^20).
local ONE_INTEGER = 1048576

redis.register_function('ratelua_ar1_v6', function(KEYS, ARGV)
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
if count < 0 then
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
  for i = 5, 2 + 3 * n, 3 do
    if helpers.integer(ARGV[i], 1, 1000000000) == nil then
      bad = helpers.refuse(KEYS, ARGV, 3, i, 'max', '[1, 10^9]')
      break
    elseif helpers.integer(ARGV[i + 1], 1001, 1000000000) == nil then
      bad = helpers.refuse(KEYS, ARGV, 3, i + 1, 'decay', '[1001, 10^9]')
      break
    elseif helpers.integer(ARGV[i + 2], 1, MAX_TIME) == nil then
      bad = helpers.refuse(KEYS, ARGV, 3, i + 2, 'resolution', '[1, 2^52]')
      break
    end
  end
  return bad or helpers.fresh(KEYS, ARGV, 3)
end

if n == 1 then
  -- One limit: the state is the boundary index of the last write and the
  -- count there, one integer when it fits. The limits are checked on
  -- every call.
  -- Canonical: digits without a leading zero (a find makes no string),
  -- then in range (the text converted by arithmetic, not by a call).
  local max, decay, resolution = ARGV[5], ARGV[6], ARGV[7]
  if find(max, '^[1-9]%d*$') and find(decay, '^[1-9]%d*$') and find(resolution, '^[1-9]%d*$') then
    max, decay, resolution = max + 0, decay + 0, resolution + 0
  else
    max = nil
  end
  if not (max and max <= 1000000000 and decay >= 1001 and decay <= 1000000000 and resolution <= MAX_TIME) then
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
    for i = 5, 2 + 3 * 1, 3 do
      if helpers.integer(ARGV[i], 1, 1000000000) == nil then
        bad = helpers.refuse(KEYS, ARGV, 3, i, 'max', '[1, 10^9]')
        break
      elseif helpers.integer(ARGV[i + 1], 1001, 1000000000) == nil then
        bad = helpers.refuse(KEYS, ARGV, 3, i + 1, 'decay', '[1001, 10^9]')
        break
      elseif helpers.integer(ARGV[i + 2], 1, MAX_TIME) == nil then
        bad = helpers.refuse(KEYS, ARGV, 3, i + 2, 'resolution', '[1, 2^52]')
        break
      end
    end
    return bad
  end
  local state = redis.pcall('GET', key)
  if type(state) == 'table' and state.err then
    return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than ' .. 'ar1'
      .. ' state (another script\'s state?): ' .. state.err)
  end
  local server = not now
  if server then
    -- The server's TIME in the unit (server_now, its strings converted
    -- by arithmetic).
    local time = redis.call('TIME')
    if unit == 'ms' then
      local micro = time[2] / 1000
      now = time[1] * 1000 + (micro - micro % 1)
    elseif unit == 's' then
      now = time[1] + 0
    else
      now = time[1] * 1000000 + time[2]
    end
  end
  local factor = decay / 1000
  -- boundary: the index of the resolution boundary at or before now, or
  -- the last write's when that is later (a clock behind). x - x % 1 is
  -- floor(x), exactly, without a call.
  local boundary, c = now / resolution, 0
  boundary = boundary - boundary % 1
  if state then
    local last, stored = tonumber(state), nil
    if last then
      stored = last % ONE_INTEGER
      last = (last - stored) / ONE_INTEGER
    else
      local index, text = string.match(state, '^(%d+):([^:]+)$')
      if index then
        last, stored = tonumber(index), tonumber(text)
      end
    end
    -- A stored count is at least 1 (a write adds at least one event).
    if stored and stored >= 1 then
      c = stored
      if last > boundary then
        -- A clock behind the last write's boundary (rarely). The state is
        -- stale when that boundary's start lies more than the limit's
        -- horizon ahead of now (and, for a caller's clock, of the
        -- server's TIME): written by a clock far ahead, it is deleted
        -- and the call counts from 0.
        local horizon, gone
        do
          local horizon_over = decay - 1000
          horizon = resolution * ((decay + (-decay) % horizon_over) / horizon_over)
        end
        gone = false
        if last * resolution > now + horizon then
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
            gone = last * resolution > stale_clock + horizon
          end
        end
        if gone then
          redis.call('DEL', key)
          c = 0
        else
          boundary = last
        end
      elseif last < boundary then
        do
          local decay_power, decay_base, decay_k = 1, factor, boundary - last
          while decay_k > 0 do
            if decay_k % 2 == 1 then
              decay_power = decay_power * decay_base
              decay_k = decay_k - 1
            end
            decay_base = decay_base * decay_base
            decay_k = decay_k / 2
          end
          c = stored / decay_power
          if c < EPSILON then
            c = 0
          end
        end
      end
    end
  end
  local asked = count
  if asked < 1 then
    asked = 1
  end
  local allowed = c + asked <= max
  local record = count > 0 and (allowed or mode == '1')
  if record then
    c = c + count
  end
  local slot_start = boundary * resolution
  local remaining, reset_after = max - c, 0
  remaining = remaining - remaining % 1
  if remaining < 0 then
    remaining = 0
  end
  if c > 0 then
    local k
    do
      local bound_room = 0 - 0
      if bound_room < EPSILON then
        bound_room = EPSILON
      end
      local bound_k = 1
      if c > bound_room then
        -- ceil, without a call (math.ceil's result for any finite value).
        local bound_ratio = math.log(c / bound_room) / math.log(factor)
        bound_k = bound_ratio - bound_ratio % 1
        if bound_k < bound_ratio then
          bound_k = bound_k + 1
        end
        if bound_k < 1 then
          bound_k = 1
        end
      end
      -- Most often the estimate is the answer: check k and k - 1 in one pass
      -- (the products of two passes: the bases are shared), else search.
      local bound_j, bound_i, bound_pk, bound_pi, bound_base = bound_k, bound_k - 1, 1, 1, factor
      while bound_j > 0 do
        if bound_j % 2 == 1 then
          bound_pk = bound_pk * bound_base
          bound_j = bound_j - 1
        end
        if bound_i % 2 == 1 then
          bound_pi = bound_pi * bound_base
          bound_i = bound_i - 1
        end
        bound_base = bound_base * bound_base
        bound_j = bound_j / 2
        bound_i = bound_i / 2
      end
      local bound_at, bound_before = c / bound_pk, c / bound_pi
      if bound_at < EPSILON then
        bound_at = 0
      end
      if bound_before < EPSILON then
        bound_before = 0
      end
      if not (bound_at + 0 <= 0 and (bound_k == 1 or bound_before + 0 > 0)) then
        while true do
          local bound_j, bound_power, bound_base = bound_k, 1, factor
          while bound_j > 0 do
            if bound_j % 2 == 1 then
              bound_power = bound_power * bound_base
              bound_j = bound_j - 1
            end
            bound_base = bound_base * bound_base
            bound_j = bound_j / 2
          end
          local bound_left = c / bound_power
          if bound_left < EPSILON then
            bound_left = 0
          end
          if bound_left + 0 <= 0 then
            break
          end
          bound_k = bound_k + 1
        end
        while bound_k > 1 do
          local bound_j, bound_power, bound_base = bound_k - 1, 1, factor
          while bound_j > 0 do
            if bound_j % 2 == 1 then
              bound_power = bound_power * bound_base
              bound_j = bound_j - 1
            end
            bound_base = bound_base * bound_base
            bound_j = bound_j / 2
          end
          local bound_left = c / bound_power
          if bound_left < EPSILON then
            bound_left = 0
          end
          if bound_left + 0 > 0 then
            break
          end
          bound_k = bound_k - 1
        end
      end
      k = bound_k
    end
    reset_after = slot_start + k * resolution - now
    if reset_after > MAX_TIME then
      reset_after = MAX_TIME
    elseif reset_after < 0 then
      reset_after = 0
    end
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
    -- One integer (the server keeps it in 16 bytes, like a counter) when
    -- the count is whole and below 2^20 and the boundary below 2^33; else
    -- '<boundary>:<count>', a whole count by '%d' (the same text as
    -- '%.17g' below 10^15, and much cheaper).
    local value
    if c % 1 ~= 0 or c >= 1000000000000000 then
      value = format('%d:%.17g', boundary, c)
    elseif c < ONE_INTEGER and boundary < 8589934592 then
      value = format('%d', boundary * ONE_INTEGER + c)
    else
      value = format('%d:%d', boundary, c)
    end
    redis.call('SET', key, value, 'PX', ttl)
  end
  if allowed then
    return { 1, remaining, 0, reset_after, 1 }
  end
  local retry = -1
  if asked <= max then
    local k
    do
      local bound_room = max - asked
      if bound_room < EPSILON then
        bound_room = EPSILON
      end
      local bound_k = 1
      if c > bound_room then
        -- ceil, without a call (math.ceil's result for any finite value).
        local bound_ratio = math.log(c / bound_room) / math.log(factor)
        bound_k = bound_ratio - bound_ratio % 1
        if bound_k < bound_ratio then
          bound_k = bound_k + 1
        end
        if bound_k < 1 then
          bound_k = 1
        end
      end
      -- Most often the estimate is the answer: check k and k - 1 in one pass
      -- (the products of two passes: the bases are shared), else search.
      local bound_j, bound_i, bound_pk, bound_pi, bound_base = bound_k, bound_k - 1, 1, 1, factor
      while bound_j > 0 do
        if bound_j % 2 == 1 then
          bound_pk = bound_pk * bound_base
          bound_j = bound_j - 1
        end
        if bound_i % 2 == 1 then
          bound_pi = bound_pi * bound_base
          bound_i = bound_i - 1
        end
        bound_base = bound_base * bound_base
        bound_j = bound_j / 2
        bound_i = bound_i / 2
      end
      local bound_at, bound_before = c / bound_pk, c / bound_pi
      if bound_at < EPSILON then
        bound_at = 0
      end
      if bound_before < EPSILON then
        bound_before = 0
      end
      if not (bound_at + asked <= max and (bound_k == 1 or bound_before + asked > max)) then
        while true do
          local bound_j, bound_power, bound_base = bound_k, 1, factor
          while bound_j > 0 do
            if bound_j % 2 == 1 then
              bound_power = bound_power * bound_base
              bound_j = bound_j - 1
            end
            bound_base = bound_base * bound_base
            bound_j = bound_j / 2
          end
          local bound_left = c / bound_power
          if bound_left < EPSILON then
            bound_left = 0
          end
          if bound_left + asked <= max then
            break
          end
          bound_k = bound_k + 1
        end
        while bound_k > 1 do
          local bound_j, bound_power, bound_base = bound_k - 1, 1, factor
          while bound_j > 0 do
            if bound_j % 2 == 1 then
              bound_power = bound_power * bound_base
              bound_j = bound_j - 1
            end
            bound_base = bound_base * bound_base
            bound_j = bound_j / 2
          end
          local bound_left = c / bound_power
          if bound_left < EPSILON then
            bound_left = 0
          end
          if bound_left + asked > max then
            break
          end
          bound_k = bound_k - 1
        end
      end
      k = bound_k
    end
    retry = slot_start + k * resolution - now
    if retry > MAX_TIME then
      retry = MAX_TIME
    elseif retry < 0 then
      retry = 0
    end
  end
  return { 0, remaining, retry, reset_after, 1 }
end

-- Two or more limits. The state counts only if it was written for these limits, which were
-- checked then. counts[i]: limit i's count (as stored, then at stamp).
local limits = unit .. ' ' .. table.concat(ARGV, ' ', 5)
local state = redis.pcall('GET', key)
if type(state) == 'table' and state.err then
  return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than ' .. 'ar1'
    .. ' state (another script\'s state?): ' .. state.err)
end
local counts = {}
local last = nil
if state then
  local stored, time, at
  stored, time, at = string.match(state, '^([^|]*)|(%d+)()')
  for i = 1, n do
    if at then
      counts[i], at = string.match(state, '^ ([^ ]+)()', at)
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
  -- Check the limits as the one-limit path does; only a bad one builds
  -- the helpers that name it.
  local valid = true
  for i = 5, #ARGV, 3 do
    local max, decay, resolution = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if not (find(max, '^[1-9]%d*$') and find(decay, '^[1-9]%d*$') and find(resolution, '^[1-9]%d*$'))
        or max + 0 > 1000000000 or decay + 0 < 1001 or decay + 0 > 1000000000 or resolution + 0 > MAX_TIME then
      valid = false
      break
    end
  end
  if not valid then
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
    for i = 5, 2 + 3 * n, 3 do
      if helpers.integer(ARGV[i], 1, 1000000000) == nil then
        bad = helpers.refuse(KEYS, ARGV, 3, i, 'max', '[1, 10^9]')
        break
      elseif helpers.integer(ARGV[i + 1], 1001, 1000000000) == nil then
        bad = helpers.refuse(KEYS, ARGV, 3, i + 1, 'decay', '[1001, 10^9]')
        break
      elseif helpers.integer(ARGV[i + 2], 1, MAX_TIME) == nil then
        bad = helpers.refuse(KEYS, ARGV, 3, i + 2, 'resolution', '[1, 2^52]')
        break
      end
    end
    return bad
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
  -- last write lies more than the widest horizon of the limits ahead of
  -- now (and, for a caller's clock, of the server's TIME): written by a
  -- clock far ahead, it is deleted and the call counts from 0.
  local widest = 0
  for i = 5, #ARGV, 3 do
    local horizon
    do
      local horizon_over = tonumber(ARGV[i + 1]) - 1000
      horizon = tonumber(ARGV[i + 2]) * ((tonumber(ARGV[i + 1]) + (-tonumber(ARGV[i + 1])) % horizon_over) / horizon_over)
    end
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

-- The counts decayed to stamp, and the decision.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for i = 1, n do
  local arg = 3 * i + 2
  local c = 0
  if last then
    local resolution = tonumber(ARGV[arg + 2])
    do
      local decay_power, decay_base, decay_k = 1, tonumber(ARGV[arg + 1]) / 1000, floor(stamp / resolution) - floor(last / resolution)
      while decay_k > 0 do
        if decay_k % 2 == 1 then
          decay_power = decay_power * decay_base
          decay_k = decay_k - 1
        end
        decay_base = decay_base * decay_base
        decay_k = decay_k / 2
      end
      c = tonumber(counts[i]) / decay_power
      if c < EPSILON then
        c = 0
      end
    end
  end
  counts[i] = c
  if c + asked > tonumber(ARGV[arg]) then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')

-- Add the events and reply from the state after this call: when allowed,
-- the limit with the fewest remaining decides; when denied, the one with
-- the longest retry (never first); ties go to the lower index.
local remaining, retry, reset_after, index = nil, 0, 0, 1
for i = 1, n do
  local arg = 3 * i + 2
  local max, factor, resolution = tonumber(ARGV[arg]), tonumber(ARGV[arg + 1]) / 1000, tonumber(ARGV[arg + 2])
  local c = counts[i]
  if record then
    c = c + count
    counts[i] = c
  end
  local slot_start = floor(stamp / resolution) * resolution
  local left = floor(max - c)
  if left < 0 then
    left = 0
  end
  if remaining == nil or left < remaining then
    remaining = left
    if allowed then
      index = i
    end
  end
  if c > 0 then
    local k
    do
      local bound_room = 0 - 0
      if bound_room < EPSILON then
        bound_room = EPSILON
      end
      local bound_k = 1
      if c > bound_room then
        -- ceil, without a call (math.ceil's result for any finite value).
        local bound_ratio = math.log(c / bound_room) / math.log(factor)
        bound_k = bound_ratio - bound_ratio % 1
        if bound_k < bound_ratio then
          bound_k = bound_k + 1
        end
        if bound_k < 1 then
          bound_k = 1
        end
      end
      -- Most often the estimate is the answer: check k and k - 1 in one pass
      -- (the products of two passes: the bases are shared), else search.
      local bound_j, bound_i, bound_pk, bound_pi, bound_base = bound_k, bound_k - 1, 1, 1, factor
      while bound_j > 0 do
        if bound_j % 2 == 1 then
          bound_pk = bound_pk * bound_base
          bound_j = bound_j - 1
        end
        if bound_i % 2 == 1 then
          bound_pi = bound_pi * bound_base
          bound_i = bound_i - 1
        end
        bound_base = bound_base * bound_base
        bound_j = bound_j / 2
        bound_i = bound_i / 2
      end
      local bound_at, bound_before = c / bound_pk, c / bound_pi
      if bound_at < EPSILON then
        bound_at = 0
      end
      if bound_before < EPSILON then
        bound_before = 0
      end
      if not (bound_at + 0 <= 0 and (bound_k == 1 or bound_before + 0 > 0)) then
        while true do
          local bound_j, bound_power, bound_base = bound_k, 1, factor
          while bound_j > 0 do
            if bound_j % 2 == 1 then
              bound_power = bound_power * bound_base
              bound_j = bound_j - 1
            end
            bound_base = bound_base * bound_base
            bound_j = bound_j / 2
          end
          local bound_left = c / bound_power
          if bound_left < EPSILON then
            bound_left = 0
          end
          if bound_left + 0 <= 0 then
            break
          end
          bound_k = bound_k + 1
        end
        while bound_k > 1 do
          local bound_j, bound_power, bound_base = bound_k - 1, 1, factor
          while bound_j > 0 do
            if bound_j % 2 == 1 then
              bound_power = bound_power * bound_base
              bound_j = bound_j - 1
            end
            bound_base = bound_base * bound_base
            bound_j = bound_j / 2
          end
          local bound_left = c / bound_power
          if bound_left < EPSILON then
            bound_left = 0
          end
          if bound_left + 0 > 0 then
            break
          end
          bound_k = bound_k - 1
        end
      end
      k = bound_k
    end
    local reset = math.max(0, math.min(MAX_TIME, slot_start + k * resolution - now))
    if reset > reset_after then
      reset_after = reset
    end
  end
  if not allowed and retry ~= -1 then
    if asked > max then
      retry, index = -1, i
    elseif c + asked > max then
      local k
      do
        local bound_room = max - asked
        if bound_room < EPSILON then
          bound_room = EPSILON
        end
        local bound_k = 1
        if c > bound_room then
          -- ceil, without a call (math.ceil's result for any finite value).
          local bound_ratio = math.log(c / bound_room) / math.log(factor)
          bound_k = bound_ratio - bound_ratio % 1
          if bound_k < bound_ratio then
            bound_k = bound_k + 1
          end
          if bound_k < 1 then
            bound_k = 1
          end
        end
        -- Most often the estimate is the answer: check k and k - 1 in one pass
        -- (the products of two passes: the bases are shared), else search.
        local bound_j, bound_i, bound_pk, bound_pi, bound_base = bound_k, bound_k - 1, 1, 1, factor
        while bound_j > 0 do
          if bound_j % 2 == 1 then
            bound_pk = bound_pk * bound_base
            bound_j = bound_j - 1
          end
          if bound_i % 2 == 1 then
            bound_pi = bound_pi * bound_base
            bound_i = bound_i - 1
          end
          bound_base = bound_base * bound_base
          bound_j = bound_j / 2
          bound_i = bound_i / 2
        end
        local bound_at, bound_before = c / bound_pk, c / bound_pi
        if bound_at < EPSILON then
          bound_at = 0
        end
        if bound_before < EPSILON then
          bound_before = 0
        end
        if not (bound_at + asked <= max and (bound_k == 1 or bound_before + asked > max)) then
          while true do
            local bound_j, bound_power, bound_base = bound_k, 1, factor
            while bound_j > 0 do
              if bound_j % 2 == 1 then
                bound_power = bound_power * bound_base
                bound_j = bound_j - 1
              end
              bound_base = bound_base * bound_base
              bound_j = bound_j / 2
            end
            local bound_left = c / bound_power
            if bound_left < EPSILON then
              bound_left = 0
            end
            if bound_left + asked <= max then
              break
            end
            bound_k = bound_k + 1
          end
          while bound_k > 1 do
            local bound_j, bound_power, bound_base = bound_k - 1, 1, factor
            while bound_j > 0 do
              if bound_j % 2 == 1 then
                bound_power = bound_power * bound_base
                bound_j = bound_j - 1
              end
              bound_base = bound_base * bound_base
              bound_j = bound_j / 2
            end
            local bound_left = c / bound_power
            if bound_left < EPSILON then
              bound_left = 0
            end
            if bound_left + asked > max then
              break
            end
            bound_k = bound_k - 1
          end
        end
        k = bound_k
      end
      local wait = math.max(0, math.min(MAX_TIME, slot_start + k * resolution - now))
      if wait > retry then
        retry, index = wait, i
      end
    end
  end
end
if record then
  state = format('%s|%d' .. string.rep(' %.17g', n), limits, stamp, unpack(counts, 1, n))
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
  redis.call('SET', key, state, 'PX', ttl)
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
end)
end

-- concurrency v6 (lua/concurrency.v6.lua)
do
-- refused is the error reply for ARGV[i], which must be `what`: the value
-- is quoted (at most 40 bytes, control and non-ASCII bytes escaped).
local function refused(ARGV, i, what)
  local value, shown = ARGV[i], 'nothing'
  if value then
    shown = "'" .. (string.gsub(string.sub(value, 1, 40), '[^ -~]', function(byte)
      return string.format('\\x%02x', string.byte(byte))
    end))
    if #value > 40 then
      shown = shown .. '...'
    end
    shown = shown .. "'"
  end
  return redis.error_reply('ERR ratelua: ARGV[' .. i .. '] ' .. what .. ', got ' .. shown)
end

-- until_last is the time from now until the latest expiry in the set of
-- key, 0 when no lease is held (the highest score is then an expired
-- lease or '#'), at most 2^52.
local function until_last(key, now)
  local last = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2]
  if last == nil then
    return 0
  end
  local wait = tonumber(last) - now
  if wait < 0 then
    return 0
  elseif wait > MAX_TIME then
    return MAX_TIME
  end
  return wait
end

-- each_member sends the command head (a table: the command, the key and
-- its options) for every member of lease `name` of `slots` slots, each
-- member preceded by `score` when set, at most 2000 arguments at a time.
local function each_member(head, name, slots, score)
  local batch, b = {}, #head
  for i = 1, b do
    batch[i] = head[i]
  end
  for k = 1, slots do
    if score then
      batch[b + 1] = score
      b = b + 1
    end
    if k == 1 then
      batch[b + 1] = name
    else
      batch[b + 1] = string.format('%s.%d', name, k)
    end
    b = b + 1
    if b >= 2000 or k == slots then
      redis.call(unpack(batch, 1, b))
      b = #head
    end
  end
end

redis.register_function('ratelua_concurrency_v6', function(KEYS, ARGV)
local tonumber, format = tonumber, string.format
local unit, mode, now = ARGV[2], ARGV[4], false
local count = 1
if ARGV[1] ~= '1' then
  count = tonumber(ARGV[1])
  if count == nil or count < -MAX_TIME or count > MAX_TIME or (ARGV[1] ~= '0' and not string.find(ARGV[1], '^%-?[1-9]%d*$')) then
    count = nil
  end
end
if ARGV[3] ~= '' then
  -- Canonical: what '%d' writes back.
  now = tonumber(ARGV[3])
  if not (now and now >= 0 and now <= MAX_TIME and format('%d', now) == ARGV[3]) then
    now = nil
  end
end
if count == nil or now == nil or #KEYS ~= 1 or (unit ~= 'ms' and unit ~= 's' and unit ~= 'us') then
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
  return helpers.refuse(KEYS, ARGV, 2)
end
local acquire = mode == '0'
if not acquire and mode ~= 'renew' and mode ~= 'release' then
  return refused(ARGV, 4, "mode must be '0' (acquire), 'renew' or 'release'")
end
if not acquire and (count < 1 or count > 1000000) then
  return refused(ARGV, 1, 'eventCount must be the slots of the lease, an integer in [1, 10^6], in mode ' .. mode)
end
if acquire and #ARGV ~= 6 and #ARGV ~= 7 then
  return redis.error_reply("ERR ratelua: expected 2 or 3 arguments after ARGV[4] in mode '0' (max, lease, and the caller's lease id), got " .. math.max(#ARGV - 4, 0))
elseif not acquire and #ARGV ~= 7 then
  return redis.error_reply("ERR ratelua: expected 3 arguments after ARGV[4] in mode '" .. mode .. "' (max, lease, lease id), got " .. math.max(#ARGV - 4, 0))
end
local max, lease = tonumber(ARGV[5]), tonumber(ARGV[6])
if not (max and max >= 1 and max <= 1000000 and format('%d', max) == ARGV[5]) then
  return refused(ARGV, 5, 'max must be a canonical integer in [1, 10^6]')
end
if not (lease and lease >= 1 and lease <= MAX_TIME and format('%d', lease) == ARGV[6]) then
  return refused(ARGV, 6, 'lease must be a canonical integer in [1, 2^52]')
end
local key = KEYS[1]
-- name: the lease id's text, of a renewal or release, or the caller's own
-- id for an acquire (ARGV[7] of mode '0'); nil for an acquire without one.
local name, id = ARGV[7], nil
if name then
  id = tonumber(name)
  if not (id and id >= 1 and id <= MAX_TIME and format('%d', id) == name) then
    return refused(ARGV, 7, 'the lease id must be a canonical integer in [1, 2^52]')
  end
end

-- The marks '#' (the counter) and '@' (the last write's time), and in
-- modes renew and release the lease's first, last and next member, read
-- by one ZMSCORE that also tells the key's shape: another type is an
-- error here, and a sorted set without either mark is another script's.
local marks
if acquire then
  if name and count > 0 then
    marks = redis.pcall('ZMSCORE', key, '#', '@', name)
  else
    marks = redis.pcall('ZMSCORE', key, '#', '@')
  end
elseif count == 1 then
  marks = redis.pcall('ZMSCORE', key, '#', '@', name, name .. '.2')
else
  marks = redis.pcall('ZMSCORE', key, '#', '@', name, format('%s.%d', name, count), format('%s.%d', name, count + 1))
end
local fresh = false
if type(marks) ~= 'table' or marks.err or not marks[1] and not marks[2] then
  if type(marks) == 'table' and not marks.err then
    fresh = redis.call('EXISTS', key) == 0
  end
  if not fresh then
    local kind = redis.call('TYPE', key)
    return redis.error_reply("ERR ratelua: KEYS[1] holds a " .. tostring(kind.ok or kind)
      .. " that is not a concurrency state (another script's or version's): left unchanged")
  end
end

-- A reset drops every lease and keeps the counter and the last write's
-- time, with the TTL.
if acquire and count < 0 then
  redis.call('ZREMRANGEBYSCORE', key, '0', '+inf')
  return { 1, max, 0, 0, 0 }
end

-- The time of the call. '@' holds the last acquire's or renewal's time t
-- as the score t - 2^53 (below 0, below every expiry). A now earlier than
-- it counts as that time. The server's TIME is read for the server clock,
-- and for a caller's now more than one lease time from the last write (or
-- on a fresh key): neither now nor the last write then counts later than
-- TIME, so a caller clock ahead of the server's cannot expire others'
-- leases early nor hold the key beyond the lease time.
local last = false
if marks[2] then
  last = tonumber(marks[2]) + 2 * MAX_TIME
end
local server = false
if not now then
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
  server = now
elseif not last or now - last > lease or last - now > lease then
  do
    local time = redis.call('TIME')
    if unit == 's' then
      server = tonumber(time[1])
    elseif unit == 'ms' then
      server = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    else
      server = tonumber(time[1]) * 1000000 + tonumber(time[2])
    end
  end
end
if server then
  if now > server then
    now = server
  end
  if last and last > server then
    last = server
  end
end
if last and now < last then
  now = last
end
local live = format('(%d', now)
local mark = format('%d', now - 2 * MAX_TIME)

if acquire then
  if name and count > 0 and marks[3] and tonumber(marks[3]) > now then
    return refused(ARGV, 7, 'the lease id is held by a live lease: choose another')
  end
  local held = redis.call('ZCOUNT', key, live, '+inf')
  local asked = count
  if asked < 1 then
    asked = 1
  end
  local remaining = max - held
  if remaining < 0 then
    remaining = 0
  end
  if held + asked <= max then
    if count == 0 then
      local reset_after = 0
      if held > 0 then
        reset_after = until_last(key, now)
      end
      return { 1, remaining, 0, reset_after, 1 }
    end
    redis.call('ZREMRANGEBYSCORE', key, '0', format('%d', now))
    local expiry = format('%d', now + lease)
    if name then
      -- The caller's id (not live: checked above; an expired one is gone).
      if count == 1 then
        redis.call('ZADD', key, expiry, name, mark, '@')
      else
        each_member({ 'ZADD', key }, name, count, expiry)
        redis.call('ZADD', key, mark, '@')
      end
    else
      -- The next id of the counter that no live lease holds (a caller may
      -- have chosen it).
      id = 1
      if marks[1] then
        id = 1 - tonumber(marks[1])
      end
      name = format('%d', id)
      if count == 1 then
        while redis.call('ZADD', key, 'NX', expiry, name) == 0 do
          id = id + 1
          name = format('%d', id)
        end
      else
        while redis.call('ZSCORE', key, name) do
          id = id + 1
          name = format('%d', id)
        end
        each_member({ 'ZADD', key }, name, count, expiry)
      end
      redis.call('ZADD', key, format('%d', -id), '#', mark, '@')
    end
    local reset_after = until_last(key, now)
    -- A fresh key has no TTL yet: GT would treat it as infinite.
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
    if fresh then
      redis.call('PEXPIRE', key, ttl)
    else
      redis.call('PEXPIRE', key, ttl, 'GT')
    end
    return { 1, remaining - count, 0, reset_after, id }
  end
  -- Denied. Wait until the need-th earliest live slot expires.
  local retry, reset_after = -1, 0
  if held > 0 then
    reset_after = until_last(key, now)
  end
  if asked <= max then
    local need = held + asked - max
    if need == held then
      retry = reset_after
    else
      local expiry = redis.call('ZRANGE', key, live, '+inf', 'BYSCORE', 'LIMIT', format('%d', need - 1), '1', 'WITHSCORES')[2]
      retry = tonumber(expiry) - now
      if retry > MAX_TIME then
        retry = MAX_TIME
      end
    end
  end
  return { 0, remaining, retry, reset_after, 1 }
end

-- Renew or release lease ARGV[7] of count slots: it is held when '<id>'
-- (and '<id>.<count>') expire after now and '<id>.<count + 1>' does not
-- exist; the slots of one lease always share one score. marks[3..] are
-- these members' scores.
local held = marks[3] and tonumber(marks[3]) > now and marks[#marks - 1] and not marks[#marks]
if held then
  if mode == 'renew' then
    local expiry = format('%d', now + lease)
    if count == 1 then
      redis.call('ZADD', key, 'XX', 'GT', expiry, name, mark, '@')
    else
      each_member({ 'ZADD', key, 'XX', 'GT' }, name, count, expiry)
      redis.call('ZADD', key, 'XX', 'GT', mark, '@')
    end
  else
    if count == 1 then
      redis.call('ZREM', key, name)
    else
      each_member({ 'ZREM', key }, name, count, nil)
    end
  end
end
local holding = redis.call('ZCOUNT', key, live, '+inf')
local remaining, reset_after = max - holding, 0
if remaining < 0 then
  remaining = 0
end
if holding > 0 then
  reset_after = until_last(key, now)
end
if not held then
  return { 0, remaining, -1, reset_after, 0 }
end
if mode == 'renew' then
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
  redis.call('PEXPIRE', key, ttl, 'GT')
end
return { 1, remaining, 0, reset_after, id }
end)
end

-- sliding_window v6 (lua/sliding_window.v6.lua)
do
-- Floor division without a function call: for integers 0 <= a and
-- 0 < b with a + b <= 2^53, r = a % b (Lua: a - floor(a / b) * b, each step
-- exact) is the remainder give or take b, as the float quotient is floor or
-- floor + 1; after "if r < 0 then r = r + b elseif r >= b then r = r - b
-- end", r = a mod b and (a - r) / b = floor(a / b), exactly.


redis.register_function('ratelua_sliding_window_v6', function(KEYS, ARGV)
local tonumber, format, match = tonumber, string.format, string.match
local count, now, n = 1, false, #ARGV - 4
if ARGV[1] ~= '1' then
  count = tonumber(ARGV[1])
  if count == nil or count < -MAX_TIME or count > MAX_TIME or (ARGV[1] ~= '0' and not string.find(ARGV[1], '^%-?[1-9]%d*$')) then
    count = nil
  end
end
if ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
  if now == nil or now < 0 or now > MAX_TIME or (ARGV[3] ~= '0' and not string.find(ARGV[3], '^%-?[1-9]%d*$')) then
    now = nil
  end
end
local unit, mode, key = ARGV[2], ARGV[4], KEYS[1]
if count == nil or now == nil or #KEYS ~= 1 or (unit ~= 'ms' and unit ~= 's' and unit ~= 'us')
  or (mode ~= '0' and mode ~= '1') or n < 3 or n % 3 ~= 0 or n > 3 * MAX_LIMITS then
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
n = n / 3
if count < 0 then
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
      bad = helpers.refuse(KEYS, ARGV, 3, i, 'max', '[1, 10^9]')
    elseif helpers.integer(ARGV[i + 1], 1, MAX_TIME) == nil then
      bad = helpers.refuse(KEYS, ARGV, 3, i + 1, 'duration', '[1, 2^52]')
    elseif helpers.integer(ARGV[i + 2], 1, MAX_TIME) == nil then
      bad = helpers.refuse(KEYS, ARGV, 3, i + 2, 'resolution', '[1, 2^52]')
    end
    if bad then
      break
    end
  end
  if bad == nil then
    for i = 5, 2 + 3 * n, 3 do
      local duration, resolution = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
      if resolution > duration then
        bad = redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3 .. ': resolution must be at most duration, got '
          .. string.format('%d > %d', resolution, duration))
        break
      end
      local r = duration % resolution
      if r < 0 then
        r = r + resolution
      elseif r >= resolution then
        r = r - resolution
      end
      local buckets = (duration - r) / resolution
      if r > 0 then
        buckets = buckets + 1
      end
      if buckets > 10000 then
        bad = redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3
          .. ': duration / resolution must be at most 10000 buckets, got ' .. string.format('%d', buckets))
        break
      end
    end
  end
  return bad or helpers.fresh(KEYS, ARGV, 3)
end

-- The last write: its time, and per limit the ring's total, span, lag and
-- newest count, if it was written for these limits (checked then).
local limits
if n == 1 then
  limits = unit .. ' ' .. ARGV[5] .. ' ' .. ARGV[6] .. ' ' .. ARGV[7]
else
  limits = unit .. ' ' .. table.concat(ARGV, ' ', 5)
end
local stored = redis.pcall('HMGET', key, 'l', 'm')
if type(stored) == 'table' and stored.err then
  return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than ' .. 'sliding_window'
    .. ' state (another script\'s state?): ' .. stored.err)
end
local meta = stored[2]

-- The quiet case, whatever the number of limits: the last write recorded
-- events (so every limit's newest bucket was its head then) and summed up
-- the rings in the head of "m": until time <boundary> no limit's head or
-- window edge moves, <room> more events fit in every limit, limit <index>
-- has the fewest left and <reset> - now is reset_after. A call before the
-- boundary that is allowed needs no limit's numbers: it adds its events to
-- <events>, the events recorded since the summary (which every limit's
-- total and newest count in "m" leave out), and rewrites the head of "m".
-- Only a call with several limits writes a summary (one limit's own path
-- costs no more than the quiet case would). The head of "m" is parsed
-- once, here, for every path that follows.
-- (index and reset are read, and the positions found, only by an allowed
-- quiet call: every capture costs every other call a string or a nested
-- match.) One limit's head is always "<time> 0 0 0 0 0": its own path
-- reads the whole of "m" in one match.
local time, events, boundary, room, at
local total1, span1, top1 -- one limit's ring
if meta and stored[1] == limits then
  if n == 1 then
    time, total1, span1, top1 = match(meta, '^(%d+) 0 0 0 0 0 (%d+) (%d+) (%d+)$')
  else
    time, events, boundary, room, at = match(meta, '^(%d+) (%d+) (%d+) (%-?%d+) %d+ %d+()')
  end
end
-- A state whose last write lies further ahead of now than the widest
-- window (and, for a caller's clock, of the server's TIME too) is stale:
-- written by a clock far ahead. It is forgotten here (meta nil), and the
-- general code below deletes it and counts from now. The common call pays
-- one comparison (a server-clock call reads TIME here, as it would below).
if time then
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
  local last = time + 0
  if last > now then
    local widest = 0
    for i = 6, #ARGV, 3 do
      local duration = ARGV[i] + 0
      if duration > widest then
        widest = duration
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
      meta, time, boundary, total1 = nil, nil, nil, nil
    end
  end
end
if boundary and boundary ~= '0' and room ~= '0' then
  local asked = count
  if asked < 1 then
    asked = 1
  end
  local from = #time + #events + 3 -- where <boundary> starts
  events = events + 0
  local left = room - events - asked
  if left >= 0 then
    if not now then
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
    local stamp = now
    if time + 0 > now then
      stamp = time + 0
    end
    if stamp < boundary + 0 then
      local index, reset = match(meta, '^(%d+) (%d+)', from + #boundary + #room + 2)
      local reset_after = reset - now
      if reset_after > MAX_TIME then
        reset_after = MAX_TIME
      end
      if count > 0 then
        redis.call('HSET', key, 'm', format('%d %d %s', stamp, events + count, string.sub(meta, from)))
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
        redis.call('PEXPIRE', key, ttl)
        return { 1, left, 0, reset_after, index + 0 }
      end
      return { 1, left + 1, 0, reset_after, index + 0 }
    end
  end
end

-- One limit, the common case: the state was written for this limit, its
-- ring has not left, fewer than 1000 bucket slots leave it now (read in one
-- HMGET and dropped along the chain; a call that records nothing saves the
-- advanced ring when more than 16 left, as the general code does), the window needs no bucket but those
-- in "m" (no partly covered oldest bucket but the newest), and no retry has
-- to be found on the chain. Any other call goes on to the general code
-- below (which reads "m" again).
if n == 1 and time then
  local total, span, top = total1, span1, top1
  if total ~= '0' then
    -- (text + 0 is the number of a canonical integer without a call)
    local max, duration, resolution = ARGV[5] + 0, ARGV[6] + 0, ARGV[7] + 0
    local last = time + 0
    if not now then
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
    local stamp = now
    if last > now then
      stamp = last
    end
    local part = duration % resolution
    if part < 0 then
      part = part + resolution
    elseif part >= resolution then
      part = part - resolution
    end
    local q = (duration - part) / resolution
    local buckets = q
    if part > 0 then
      buckets = q + 1
    end
    local into = stamp % resolution
    if into < 0 then
      into = into + resolution
    elseif into >= resolution then
      into = into - resolution
    end
    local head = (stamp - into) / resolution
    local w = last % resolution
    if w < 0 then
      w = w + resolution
    elseif w >= resolution then
      w = w - resolution
    end
    w = (last - w) / resolution
    local edge = head - buckets
    local first = w - span
    local low = head - q
    if into < part then
      low = low - 1
    end
    local partial = edge + 1
    total = total + 0
    top = top + 0
    local simple = w > edge and edge - first < 999
    local leaving = 0
    if simple and edge >= first then
      leaving = edge - first + 1
      -- Drop the buckets leaving the ring along the chain, oldest first:
      -- their slots, first to edge, read at once.
      local names = {}
      for b = first, edge do
        names[b - first + 1] = format('1.%d', b % buckets)
      end
      local read = redis.call('HMGET', key, unpack(names))
      local b = first
      while b <= edge do
        local v, bucket, c, step = read[b - first + 1], nil, nil, nil
        if v then
          bucket, c, step = match(v, '^(%d+):(%d+):(%d+)$')
        end
        if bucket == nil or bucket + 0 ~= b or step == '0' then
          break -- not a chain this script wrote: the general code decides
        end
        total = total - c
        b = b + step
      end
      simple = b > edge and b <= w
      first = b
    end
    if simple and not (low == partial and partial < w and partial >= first) then
      local wc = top + 0
      local window = total
      if low == partial and first == partial then
        window = total - wc -- partial == w: the ring holds bucket w alone
      end
      local asked = count
      if asked < 1 then
        asked = 1
      end
      local allowed = window + asked <= max
      local record = count > 0 and (allowed or mode == '1')
      -- A denied call that records nothing retries when its oldest bucket
      -- leaves the window (no walk) if that is enough: when the ring holds
      -- bucket w alone, or when one event too many is asked (window + asked
      -- = max + 1, the common denial: every bucket holds at least one).
      if allowed or asked > max or (not record and (first == w or window + asked == max + 1)) then
        if record then
          local current = 0
          local spilled = nil
          if w == head then
            current = wc
          else
            -- Spill bucket w to its field, linked to head.
            spilled = format('%d:%d:%d', w, wc, head - w)
          end
          local updated = current + count
          if updated > max + 1 then
            updated = max + 1
          end
          total = total + updated - current
          window = window + updated - current
          meta = format('%d 0 0 0 0 0 %d %d %d', stamp, total, head - first, updated)
          if spilled then
            redis.call('HSET', key, 'm', meta, format('1.%d', w % buckets), spilled)
          else
            redis.call('HSET', key, 'm', meta)
          end
          w = head
        elseif leaving > 16 then
          -- Save the advanced ring, so that the next calls need not read
          -- these buckets again (the key keeps its TTL).
          redis.call('HSET', key, 'm', format('%d 0 0 0 0 0 %d %d %d', last, total, w - first, wc))
        end
        local reset_after = 0
        if window > 0 then
          reset_after = w * resolution + duration - now
          if reset_after > MAX_TIME then
            reset_after = MAX_TIME
          elseif reset_after < 0 then
            reset_after = 0
          end
        end
        if record then
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
          redis.call('PEXPIRE', key, ttl)
        end
        local left = max - window
        if left < 0 then
          left = 0
        end
        if allowed then
          return { 1, left, 0, reset_after, 1 }
        end
        if asked > max then
          return { 0, left, -1, reset_after, 1 }
        end
        local retry = first * resolution + duration - now
        if retry > MAX_TIME then
          retry = MAX_TIME
        elseif retry < 0 then
          retry = 0
        end
        return { 0, left, retry, reset_after, 1 }
      end
    end
  end
end

-- Several limits, the same common case for every limit, in passes over
-- the limits with the values of limit i in f[11 * (i - 1) + 1 .. + 11]:
-- max, duration, resolution, N, head, w, oldest, total, count of w, the
-- newest bucket out of the window (then the window count) and the index in
-- the read of the limit's first leaving slot (a call that records finds
-- the summary's times then: a denial needs none of them). The slots leaving every
-- ring, fewer than 1000 in all, are read in one HMGET (a call that records
-- nothing saves the advanced rings when more than 16 left). Any limit
-- outside the common case sends the call to the general code.
if n > 1 and time then
  do
    local last = time + 0
    if events == '0' then
      events = 0 -- (a comparison of interned strings: no conversion)
    else
      events = events + 0
    end
    if not now then
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
    local stamp = now
    if last > now then
      stamp = last
    end
    local asked = count
    if asked < 1 then
      asked = 1
    end
    local f = {
      nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
      nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
      nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
    }
    local names, reads = nil, 0
    local simple = true
    local j = 0
    for arg = 5, 2 + 3 * n, 3 do
      local total, span, top
      total, span, top, at = match(meta, '^ (%d+) (%d+) (%d+)()', at)
      if total == nil or total == '0' then
        simple = false
        break
      end
      local max, duration, resolution = ARGV[arg] + 0, ARGV[arg + 1] + 0, ARGV[arg + 2] + 0
      local part = duration % resolution
      if part < 0 then
        part = part + resolution
      elseif part >= resolution then
        part = part - resolution
      end
      local q = (duration - part) / resolution
      local buckets = q
      if part > 0 then
        buckets = q + 1
      end
      local into = stamp % resolution
      if into < 0 then
        into = into + resolution
      elseif into >= resolution then
        into = into - resolution
      end
      local head = (stamp - into) / resolution
      local w = last % resolution
      if w < 0 then
        w = w + resolution
      elseif w >= resolution then
        w = w - resolution
      end
      w = (last - w) / resolution
      local edge = head - buckets
      local first = w - span
      if w <= edge then
        -- The whole ring has left: the limit starts again at head, empty
        -- (no read; its stale fields are ignored until reused).
        w, first, total, top = head, head, 0, 0
      elseif reads + edge - first >= 999 then
        simple = false
        break
      else
        total, top = total + events, top + events
      end
      local low = head - q
      if into < part then
        low = low - 1
      end
      f[j + 1], f[j + 2], f[j + 3], f[j + 4], f[j + 5], f[j + 6] = max, duration, resolution, buckets, head, w
      f[j + 7], f[j + 8], f[j + 9], f[j + 10], f[j + 11] = first, total, top, low, reads + 1
      if edge >= first then
        names = names or {}
        local i = j / 11 + 1
        for b = first, edge do
          reads = reads + 1
          names[reads] = format('%d.%d', i, b % buckets)
        end
      end
      j = j + 11
    end
    if simple and at == #meta + 1 then
      local read = names and redis.call('HMGET', key, unpack(names, 1, reads))
      local allowed, never, walk = true, false, false
      for o = 0, j - 11, 11 do
        local max, head, w, first, total = f[o + 1], f[o + 5], f[o + 6], f[o + 7], f[o + 8]
        local edge = head - f[o + 4]
        if edge >= first then
          -- Drop the buckets leaving the ring along the chain.
          local from, b = f[o + 11] - first, first
          while b <= edge do
            local v, bucket, c, step = read[from + b], nil, nil, nil
            if v then
              bucket, c, step = match(v, '^(%d+):(%d+):(%d+)$')
            end
            if bucket == nil or bucket + 0 ~= b or step == '0' then
              break -- not a chain this script wrote: the general code decides
            end
            total = total - c
            b = b + step
          end
          if b <= edge or b > w then
            simple = false
            break
          end
          first = b
          f[o + 7], f[o + 8] = first, total
        end
        local low, partial = f[o + 10], edge + 1
        if low == partial and partial < w and partial >= first then
          simple = false
          break
        end
        local window = total
        if low == partial and first == partial then
          window = total - f[o + 9] -- partial == w: the ring holds bucket w alone
        end
        f[o + 10] = window
        if window + asked > max then
          allowed = false
        end
        if asked > max then
          never = true
        elseif window + asked > max + 1 and first ~= w then
          walk = true -- its retry needs the chain
        end
      end
      -- A denied call needs no retry walk when some limit can never admit
      -- `asked` events (retry_after is -1 and that limit decides), or when
      -- it records nothing and every limit over its max holds bucket w
      -- alone or is over by one event (it retries when its oldest bucket
      -- leaves the window).
      local record = count > 0 and (allowed or mode == '1')
      if simple and (allowed or never or not (walk or record)) then
        local written = { 'm', false } -- HSET's arguments
        local h = 2
        local mb = 11 * n -- f[mb + 1 .. mb + 3 * n]: the meta words
        local remaining, retry, reset_after, index = nil, 0, 0, 1
        -- The summary of a call that records (see the quiet case).
        local boundary, room, least, reset = MAX_TIME * 2, nil, 1, 0
        for i = 1, n do
          local o = 11 * (i - 1)
          local max, duration, resolution, buckets, head = f[o + 1], f[o + 2], f[o + 3], f[o + 4], f[o + 5]
          local w, first, total, wc, window = f[o + 6], f[o + 7], f[o + 8], f[o + 9], f[o + 10]
          if record then
            local current = 0
            if w == head then
              current = wc
            else
              -- Spill bucket w to its field, linked to head.
              written[h + 1] = format('%d.%d', i, w % buckets)
              written[h + 2] = format('%d:%d:%d', w, wc, head - w)
              h = h + 2
            end
            wc = current + count
            if wc > max + 1 then
              wc = max + 1
            end
            total = total + wc - current
            window = window + wc - current
            w = head
            -- The head moves at (head + 1) * resolution, the window's edge
            -- at head * resolution + the width of its oldest bucket.
            local moves = head * resolution
            local oldest = duration - (buckets - 1) * resolution
            if stamp - moves < oldest then
              moves = moves + oldest
            else
              moves = moves + resolution
            end
            if moves < boundary then
              boundary = moves
            end
            if room == nil or max - window < room then
              room, least = max - window, i
            end
            if head * resolution + duration > reset then
              reset = head * resolution + duration
            end
          end
          if window > 0 then
            local reset = w * resolution + duration - now
            if reset > MAX_TIME then
              reset = MAX_TIME
            end
            if reset > reset_after then
              reset_after = reset
            end
          end
          local left = max - window
          if left < 0 then
            left = 0
          end
          if remaining == nil or left < remaining then
            remaining = left
            if allowed then
              index = i
            end
          end
          if not allowed and retry ~= -1 then
            if asked > max then
              retry, index = -1, i
            elseif window + asked > max then
              local r = first * resolution + duration - now
              if r > MAX_TIME then
                r = MAX_TIME
              end
              if r > retry then
                retry, index = r, i
              end
            end
          end
          local a = mb + 3 * i
          f[a - 2], f[a - 1], f[a] = total, w - first, wc
        end
        if record then
          written[2] = format('%d 0 %d %d %d %d' .. string.rep(' %d %d %d', n), stamp, boundary, room, least, reset,
            unpack(f, mb + 1, mb + 3 * n))
          if #written[2] > 64 then
            local plain = format('%d 0 0 0 0 0' .. string.rep(' %d %d %d', n), stamp, unpack(f, mb + 1, mb + 3 * n))
            if #plain <= 64 then
              written[2] = plain
            end
          end
          redis.call('HSET', key, unpack(written, 1, h))
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
          redis.call('PEXPIRE', key, ttl)
        elseif reads > 16 then
          -- Save the advanced rings (the key keeps its TTL).
          redis.call('HSET', key, 'm', format('%d 0 0 0 0 0' .. string.rep(' %d %d %d', n), last, unpack(f, mb + 1, mb + 3 * n)))
        end
        if allowed then
          return { 1, remaining, 0, reset_after, index }
        end
        return { 0, remaining, retry, reset_after, index }
      end
    end
  end
end

-- Offsets of a limit's values in the table t (see below).
local MAX, DURATION, RESOLUTION, BUCKETS, WHOLE, PART, TOTAL, SPAN, BOUNDARY, HEAD = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
local LOW, NEWEST, OLDEST, LEAVING, LEAVING_AT, WINDOW, NEWEST_COUNT = 11, 12, 13, 14, 15, 16, 17
local PARTIAL_VALUE, FIELD_FORMAT = 18, 19

-- One flat table t. Limit i owns t[o + MAX .. o + FIELD_FORMAT],
-- o = 20 * (i - 1): MAX, DURATION, RESOLUTION; BUCKETS, N; WHOLE and PART,
-- floor(duration / resolution) and duration mod resolution; TOTAL, SPAN
-- and NEWEST_COUNT, the ring's meta words; HEAD, the bucket of the
-- decision's time; LOW, the newest bucket out of the window; NEWEST, the
-- newest non-empty bucket w (false: empty ring); OLDEST, the oldest
-- non-empty bucket (false: empty ring); LEAVING, the first bucket leaving
-- the ring, and LEAVING_AT the index of its field in the read; WINDOW, the
-- window count; PARTIAL_VALUE, the read value of the partly covered oldest
-- bucket when it is not w (false: not read); FIELD_FORMAT, the format of the
-- limit's field names, '<i>.%d' (nil until needed; string.format is cheaper
-- than concatenating numbers).
-- After them (base = 20 * n): the fields read, then the fields written, the
-- meta words and the fields read ahead on a chain. The constructor sizes the
-- array part for one limit at once (growing a table rehashes it).
local t = {
  nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
  nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
}

local last, at, events = nil, nil, 0
if meta and stored[1] == limits then
  last, events, at = match(meta, '^(%d+) (%d+) %d+ %-?%d+ %d+ %d+()')
  events = tonumber(events) or 0
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
      bad = helpers.refuse(KEYS, ARGV, 3, i, 'max', '[1, 10^9]')
    elseif helpers.integer(ARGV[i + 1], 1, MAX_TIME) == nil then
      bad = helpers.refuse(KEYS, ARGV, 3, i + 1, 'duration', '[1, 2^52]')
    elseif helpers.integer(ARGV[i + 2], 1, MAX_TIME) == nil then
      bad = helpers.refuse(KEYS, ARGV, 3, i + 2, 'resolution', '[1, 2^52]')
    end
    if bad then
      break
    end
  end
  if bad == nil then
    for i = 5, 2 + 3 * n, 3 do
      local duration, resolution = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
      if resolution > duration then
        bad = redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3 .. ': resolution must be at most duration, got '
          .. string.format('%d > %d', resolution, duration))
        break
      end
      local r = duration % resolution
      if r < 0 then
        r = r + resolution
      elseif r >= resolution then
        r = r - resolution
      end
      local buckets = (duration - r) / resolution
      if r > 0 then
        buckets = buckets + 1
      end
      if buckets > 10000 then
        bad = redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3
          .. ': duration / resolution must be at most 10000 buckets, got ' .. string.format('%d', buckets))
        break
      end
    end
  end
  if bad then
    return bad
  end
end
local last_o = 20 * (n - 1)
for o = 0, last_o, 20 do
  local arg = 5 + o / 20 * 3
  local duration, resolution = ARGV[arg + 1] + 0, ARGV[arg + 2] + 0
  local r = duration % resolution
  if r < 0 then
    r = r + resolution
  elseif r >= resolution then
    r = r - resolution
  end
  local q = (duration - r) / resolution
  local buckets = q
  if r > 0 then
    buckets = q + 1
  end
  t[o + MAX], t[o + DURATION], t[o + RESOLUTION] = ARGV[arg] + 0, duration, resolution
  t[o + BUCKETS], t[o + WHOLE], t[o + PART] = buckets, q, r
  if last then
    local total, span, newest
    total, span, newest, at = match(meta, '^ (%d+) (%d+) (%d+)()', at)
    if total == nil then
      last = nil
    else
      t[o + TOTAL], t[o + SPAN], t[o + NEWEST_COUNT] = total + events, span + 0, newest + events
    end
  end
end
if last and at == #meta + 1 then
  last = tonumber(last)
else
  last = nil
end
if (meta or stored[1]) and last == nil then
  redis.call('DEL', key) -- written for other limits
end
if not now then
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
local stamp = now
if last ~= nil and last > now then
  stamp = last
end

-- Advance every ring to stamp: name the buckets leaving it and the partly
-- covered oldest bucket (the newest bucket is in the meta), to read them at
-- once.
local base = 20 * n
local m = 0
local leaving = 0
for o = 0, last_o, 20 do
  local resolution, buckets = t[o + RESOLUTION], t[o + BUCKETS]
  local into = stamp % resolution
  if into < 0 then
    into = into + resolution
  elseif into >= resolution then
    into = into - resolution
  end
  local head = (stamp - into) / resolution
  local low = head - t[o + WHOLE]
  t[o + BOUNDARY] = (head + 1) * resolution
  if into < t[o + PART] then
    low = low - 1
    t[o + BOUNDARY] = head * resolution + t[o + PART]
  end
  local edge = head - buckets
  local written, first = false, false
  if last ~= nil and t[o + TOTAL] > 0 then
    local w = last % resolution
    if w < 0 then
      w = w + resolution
    elseif w >= resolution then
      w = w - resolution
    end
    w = (last - w) / resolution
    -- The whole ring, up to w, has left when w <= edge.
    if w > edge then
      written, first = w, w - t[o + SPAN]
      -- Every bucket before the oldest non-empty one has been dropped.
      local lo = first
      t[o + LEAVING], t[o + LEAVING_AT] = lo, m + 1
      local partial = edge + 1
      local partly = low == partial and partial < w and partial >= first
      if edge >= lo or partly then
        local name = format('%d.%%d', o / 20 + 1)
        t[o + FIELD_FORMAT] = name
        if edge >= lo then
          leaving = leaving + edge - lo + 1
          for b = lo, edge do
            m = m + 1
            t[base + m] = format(name, b % buckets)
          end
        end
        if partly then
          m = m + 1
          t[base + m] = format(name, partial % buckets)
        end
      end
    end
  end
  if not written then
    t[o + TOTAL] = 0
  end
  t[o + HEAD], t[o + LOW], t[o + NEWEST], t[o + OLDEST] = head, low, written, first
end
-- vals[vb + j] is the value of the j-th field named.
local vals, vb = t, base
if m > 0 then
  if m <= 1000 then
    vals, vb = redis.call('HMGET', key, unpack(t, base + 1, base + m)), 0
  else
    for f = 1, m, 1000 do
      local e = f + 999
      if e > m then
        e = m
      end
      local read = redis.call('HMGET', key, unpack(t, base + f, base + e))
      for j = f, e do
        t[base + j] = read[j - f + 1]
      end
    end
  end
end

-- Drop the leaving buckets (all older than w), walking the chain from its
-- oldest bucket; count each window and decide.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for o = 0, last_o, 20 do
  local total, written, first = t[o + TOTAL], t[o + NEWEST], t[o + OLDEST]
  if written then
    local low, edge, lo, at = t[o + LOW], t[o + HEAD] - t[o + BUCKETS], t[o + LEAVING], t[o + LEAVING_AT]
    local ahead = edge - lo + 1
    if ahead < 0 then
      ahead = 0
    end
    local pv = false
    local partial = edge + 1
    if low == partial and partial < written and partial >= first then
      pv = vals[vb + at + ahead] or ''
    end
    t[o + PARTIAL_VALUE] = pv
    while first and first <= edge do
      local v = vals[vb + at + first - lo]
      local c, s = 0, 0
      if v then
        local b, vc, vs = match(v, '^(%d+):(%d+):(%d+)$')
        if b ~= nil and tonumber(b) == first then
          c, s = tonumber(vc), tonumber(vs)
        end
      end
      total = total - c
      if s == 0 then
        first, written = false, false
      else
        first = first + s
      end
    end
    t[o + TOTAL], t[o + NEWEST], t[o + OLDEST] = total, written, first
    if low == partial and first == partial then
      if partial == written then
        total = total - t[o + NEWEST_COUNT]
      else
        local b, vc = match(pv, '^(%d+):(%d+):%d+$')
        if b ~= nil and tonumber(b) == partial then
          total = total - tonumber(vc)
        end
      end
    end
  end
  t[o + WINDOW] = total
  if total + asked > t[o + MAX] then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')
local save = record or leaving > 16

-- Record, and reply from the state after this call: when allowed, the limit
-- with the fewest remaining decides; when denied, the one with the longest
-- retry (never first); ties go to the lower index.
local k = base -- t[base + 1 .. k]: the fields written (the spilled buckets)
local mb = base + 2 * n -- t[mb + 1 .. mb + 3 * n]: the meta words
local rb = base + 5 * n -- t[rb + 1 ..]: the fields read ahead
local remaining, retry, reset_after, index = nil, 0, 0, 1
-- The summary of a call that records (see the quiet case).
local boundary, room, least, reset = MAX_TIME * 2, nil, 1, 0
for o = 0, last_o, 20 do
  local max, duration, resolution, buckets = t[o + MAX], t[o + DURATION], t[o + RESOLUTION], t[o + BUCKETS]
  local total, head, low, written, first, window = t[o + TOTAL], t[o + HEAD], t[o + LOW], t[o + NEWEST], t[o + OLDEST], t[o + WINDOW]
  local i = o / 20 + 1
  -- The newest bucket before this call, its count and its step (to head
  -- when this call records in a later bucket).
  local newest, wc, ws = written, t[o + NEWEST_COUNT], 0
  local top = wc -- the newest bucket's count after this call
  if record then
    local current = 0
    if written then
      if written == head then
        current = wc
      else
        -- Spill the previous newest bucket to its field, linked to head.
        ws = head - written
        local name = t[o + FIELD_FORMAT]
        if name == nil then
          name = format('%d.%%d', i)
          t[o + FIELD_FORMAT] = name
        end
        t[k + 1], t[k + 2] = format(name, written % buckets), format('%d:%d:%d', written, wc, ws)
        k = k + 2
      end
    end
    top = current + count
    if top > max + 1 then
      top = max + 1
    end
    total = total + top - current
    window = window + top - current
    written = head
    if not first then
      first = head
    end
    if t[o + BOUNDARY] < boundary then
      boundary = t[o + BOUNDARY]
    end
    if room == nil or max - window < room then
      room, least = max - window, i
    end
    if head * resolution + duration > reset then
      reset = head * resolution + duration
    end
  end

  local r = 0
  if asked > max then
    r = -1
  elseif not allowed and window + asked > max then
    -- The time at which enough of the oldest events have left the window
    -- for `asked` events to fit: walk the chain, reading up to 16 buckets
    -- ahead at a time (all but those already known).
    local excess = window + asked - max
    local partial = head - buckets + 1
    local name = t[o + FIELD_FORMAT] or format('%d.%%d', i)
    local b = first
    local from, to, read, digits = 0, -1, nil, nil
    while true do
      local c, s = 0, 0
      if record and b == head then
        c = top
      elseif b == newest then
        c, s = wc, ws
      else
        local v
        if b == partial and t[o + PARTIAL_VALUE] then
          v = t[o + PARTIAL_VALUE]
        else
          if b > to then
            from, to = b, b + 15
            if to > written then
              to = written
            end
            -- The names of consecutive slots share their stem, '<i>.' and
            -- all digits but the last (a concatenation is cheaper than
            -- string.format).
            digits = digits or { '0', '1', '2', '3', '4', '5', '6', '7', '8', '9' }
            local f, stem = rb, nil
            for x = from, to do
              local slot = x % buckets
              local d = slot % 10
              if stem == nil or d == 0 then
                if slot < 10 then
                  stem = string.sub(name, 1, -3)
                else
                  stem = format(name, (slot - d) / 10)
                end
              end
              if x ~= newest and not (record and x == head) then
                f = f + 1
                t[f] = stem .. digits[d + 1]
              end
            end
            read = redis.call('HMGET', key, unpack(t, rb + 1, f))
          end
          local j = b - from + 1
          if newest and newest >= from and newest < b then
            j = j - 1
          end
          v = read[j]
        end
        if v then
          local sb, vc, vs = match(v, '^(%d+):(%d+):(%d+)$')
          if sb ~= nil and tonumber(sb) == b then
            c, s = tonumber(vc), tonumber(vs)
          end
        end
      end
      if b > low then
        excess = excess - c
        if excess <= 0 then
          break
        end
      end
      if s == 0 then
        -- Unreachable while the ring totals agree with the chain.
        error('ratelua: sliding_window state of ' .. key .. ' is inconsistent')
      end
      b = b + s
    end
    r = b * resolution + duration - now
    if r > MAX_TIME then
      r = MAX_TIME
    elseif r < 0 then
      r = 0
    end
  end
  if window > 0 then
    local reset = written * resolution + duration - now
    if reset > MAX_TIME then
      reset = MAX_TIME
    elseif reset < 0 then
      reset = 0
    end
    if reset > reset_after then
      reset_after = reset
    end
  end
  local left = max - window
  if left < 0 then
    left = 0
  end
  if remaining == nil or left < remaining then
    remaining = left
    if allowed then
      index = i
    end
  end
  if not allowed and retry ~= -1 and (r == -1 or r > retry) then
    retry, index = r, i
  end
  if save then
    local a = mb + 3 * i
    if first then
      t[a - 2], t[a - 1], t[a] = total, written - first, top
    else
      t[a - 2], t[a - 1], t[a] = 0, 0, 0
    end
  end
end

-- Write what was recorded, or, when this call had to read many buckets
-- leaving the rings, the advanced rings alone so that the next calls need
-- not read them again (the key keeps its TTL).
if save then
  if record and n > 1 then
    meta = format('%d 0 %d %d %d %d' .. string.rep(' %d %d %d', n), stamp, boundary, room, least, reset,
      unpack(t, mb + 1, mb + 3 * n))
    if #meta > 64 then
      local plain = format('%d 0 0 0 0 0' .. string.rep(' %d %d %d', n), stamp, unpack(t, mb + 1, mb + 3 * n))
      if #plain <= 64 then
        meta = plain
      end
    end
  else
    local time = last
    if record then
      time = stamp
    end
    meta = format('%d 0 0 0 0 0' .. string.rep(' %d %d %d', n), time, unpack(t, mb + 1, mb + 3 * n))
  end
  if last == nil then
    redis.call('HSET', key, 'l', limits, 'm', meta, unpack(t, base + 1, k))
  else
    redis.call('HSET', key, 'm', meta, unpack(t, base + 1, k))
  end
  if record then
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
    redis.call('PEXPIRE', key, ttl)
  end
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
end)
end

-- token_bucket v6 (lua/token_bucket.v6.lua)
do
redis.register_function('ratelua_token_bucket_v6', function(KEYS, ARGV)
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
end)
end

-- zset_log v6 (lua/zset_log.v6.lua)
do
redis.register_function('ratelua_zset_log_v6', function(KEYS, ARGV)
local tonumber, format, match, find = tonumber, string.format, string.match, string.find
local count, now = 1, false
if ARGV[1] ~= '1' then
  count = tonumber(ARGV[1])
  if count == nil or count < -MAX_TIME or count > MAX_TIME or (ARGV[1] ~= '0' and not string.find(ARGV[1], '^%-?[1-9]%d*$')) then
    count = nil
  end
end
if ARGV[3] ~= '' then
  -- Canonical: '0', or a digit 1-9 then digits (what '%d' writes), which
  -- text + 0 reads without a call (a find and no string made: cheaper
  -- than comparing with format('%d', ...)).
  local text = ARGV[3]
  now = nil
  if text == '0' then
    now = 0
  elseif text and find(text, '^[1-9]%d*$') then
    now = text + 0
    if now > MAX_TIME then
      now = nil
    end
  end
end
local n = (#ARGV - 4) / 2
if count == nil or now == nil or #KEYS ~= 1 or (ARGV[2] ~= 'ms' and ARGV[2] ~= 's' and ARGV[2] ~= 'us')
  or (ARGV[4] ~= '0' and ARGV[4] ~= '1') or (n ~= 1 and (n < 1 or n > MAX_LIMITS or n % 1 ~= 0)) then
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
  return helpers.refuse(KEYS, ARGV, 2)
end
local unit, mode, key = ARGV[2], ARGV[4], KEYS[1]

-- One limit, the common case, with locals only: the limit is checked
-- inline (its '%d' text must be ARGV's), and the window is counted from
-- the newest event, which tells the set's size (its index minus its base,
-- plus 1), and the events at or before the window's start (ZCOUNT from
-- -inf, an integer, which stops at the first event inside the window): the
-- count is the size minus those. Bad limits and resets go on to the
-- general code, which refuses or resets.
if n == 1 and count >= 0 then
  local max, window = 0, 0
  if find(ARGV[5], '^[1-9]%d*$') and find(ARGV[6], '^[1-9]%d*$') then
    max, window = ARGV[5] + 0, ARGV[6] + 0
  end
  if max >= 1 and max <= 10000 and window >= 1 and window <= MAX_TIME then
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
    -- first_index: the base of the newest event, as text.
    local last, newest, size, first_index = nil, 0, 0, nil
    local top = redis.pcall('ZRANGE', key, '-1', '-1')
    if type(top) == 'table' and top.err then
      return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than ' .. 'zset_log'
        .. ' state (another script\'s state?): ' .. top.err)
    end
    top = top[1]
    if top then
      local time, index
      time, index, first_index = match(top, '^(%d+):%l(%d+):(%d+)$')
      if time == nil then
        return redis.error_reply('ERR ratelua: KEYS[1] holds a member that is not a zset_log event')
      end
      -- (text + 0 is the number of a digit string without a call)
      last, newest = time + 0, index + 0
      size = newest - first_index + 1
      if last > now + window then
        local gone
        gone = false
        if last > now + window then
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
            gone = last > stale_clock + window
          end
        end
        if gone then
          redis.call('DEL', key)
          last, newest, size, first_index, top = nil, 0, 0, nil, nil
        end
      end
    end
    local stamp = now
    if last and last > now then
      stamp = last
    end
    local asked = count
    if asked < 1 then
      asked = 1
    end
    -- c: the events in the window. When the set is too small for a denial,
    -- ZCOUNT counts the events out of the window (an integer); else the
    -- oldest event in the window is read (first, its name): indexes are
    -- consecutive, so c is the newest index minus its index plus 1, and it
    -- is the retry event of a denied call at saturation (mode 0,
    -- eventCount 1).
    local c, first = 0, nil
    if size > 0 and last > stamp - window then
      c = size
      if size + asked <= max then
        if size > 1 then
          c = size - redis.call('ZCOUNT', key, '-inf', format('%d', stamp - window))
        end
      elseif size > 1 then
        first = redis.call('ZRANGE', key, format('(%d', stamp - window), '+inf', 'BYSCORE', 'LIMIT', '0', '1')[1]
        local index = match(first, '^%d+:%l(%d+):')
        if index == nil then
          return redis.error_reply('ERR ratelua: KEYS[1] holds a member that is not a zset_log event')
        end
        c = newest - index + 1
      else
        first = top
      end
    end
    local allowed = c + asked <= max
    local record = count > 0 and (allowed or mode == '1')
    local added = 0
    local previous = last -- the newest event's time before this call
    if record then
      -- More than max + 1 events at once are recorded as max + 1: no reply
      -- can tell them apart.
      added = count
      if added > max + 1 then
        added = max + 1
      end
      local keep = max + 1 - added
      if c < keep then
        keep = c
      end
      local removable = size - keep
      if removable > 0 and removable >= keep then
        redis.call('ZREMRANGEBYRANK', key, '0', format('%d', removable - 1))
        size = keep
      end
      local base = newest - size + 1
      if first_index == nil or base ~= first_index + 0 then
        first_index = format('%d', base)
      end
      local score = ARGV[3]
      if stamp ~= now or score == '' then
        score = format('%d', stamp)
      end
      -- Member names: the index after a letter for its number of digits
      -- (a: 1 digit, b: 2, ...), then the base.
      local index = newest + 1
      if added == 1 then
        local letter
        if index < 10 then
          letter = 'a'
        elseif index < 100 then
          letter = 'b'
        elseif index < 1000 then
          letter = 'c'
        elseif index < 10000 then
          letter = 'd'
        else
          local digits, ten = 5, 100000
          while index >= ten do
            digits, ten = digits + 1, ten * 10
          end
          letter = string.char(96 + digits)
        end
        redis.call('ZADD', key, score, format('%s:%s%d:%s', score, letter, index, first_index))
      else
        local letter, ten = 97, 10
        while index >= ten do
          letter, ten = letter + 1, ten * 10
        end
        local batch = {}
        local b = 0
        for j = index, newest + added do
          if j >= ten then
            letter, ten = letter + 1, ten * 10
          end
          batch[b + 1], batch[b + 2] = score, format('%s:%c%d:%d', score, letter, j, base)
          b = b + 2
          if b == 2000 or j == newest + added then
            redis.call('ZADD', key, unpack(batch, 1, b))
            b = 0
          end
        end
      end
      newest, last = newest + added, stamp
      c = c + added
    end
    local left = max - c
    if left < 0 then
      left = 0
    end
    local reset_after = 0
    if c > 0 then
      reset_after = last + window - now
      if reset_after > MAX_TIME then
        reset_after = MAX_TIME
      elseif reset_after < 0 then
        reset_after = 0
      end
    end
    if record then
      -- In unit ms the TTL is the text of ARGV[6] when it is the window
      -- (reset_after >= 1 here).
      local ttl = ARGV[6]
      if unit ~= 'ms' or reset_after ~= window then
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
      end
      redis.call('PEXPIRE', key, ttl)
    end
    if allowed then
      return { 1, left, 0, reset_after, 1 }
    end
    if asked > max then
      return { 0, left, -1, reset_after, 1 }
    end
    -- Wait until the (max - asked + 1)-th newest event leaves the window:
    -- one of this call's, the newest before it, the oldest in the window
    -- if it was read, or another one (read by rank).
    local rank = max - asked
    local time
    if rank < added then
      time = stamp
    elseif rank == added then
      time = previous
    elseif rank == c - 1 and first then
      time = match(first, '^%d+') + 0
    else
      local r = format('%d', rank)
      time = match(redis.call('ZRANGE', key, r, r, 'REV')[1], '^%d+') + 0
    end
    local retry = time + window - now
    if retry > MAX_TIME then
      retry = MAX_TIME
    elseif retry < 0 then
      retry = 0
    end
    return { 0, left, retry, reset_after, 1 }
  end
end

-- The general code: several limits, a reset, or a bad limit to refuse.

-- member reads a member's time, index and base; nil if it is not a
-- zset_log event (v4 names its members as v3 does).
local function member(name)
  local time, index, base = string.match(name, '^(%d+):%l(%d+):(%d+)$')
  if time == nil then
    return nil
  end
  return tonumber(time), tonumber(index), tonumber(base)
end

-- name is the member of event `index` at time `score` (text), whose base
-- is `base`.
local function name(score, index, base)
  local letter = 'a'
  if index >= 10 then
    local digits, ten = 2, 100
    while index >= ten do
      digits, ten = digits + 1, ten * 10
    end
    letter = string.char(96 + digits)
  end
  return string.format('%s:%s%d:%d', score, letter, index, base)
end

-- The limits: largest is the largest max, wide the index of the (first)
-- widest window.
-- bad: the first bad limit argument, its field and range (in words).
local largest, wide, widest = 0, 1, 0
local bad, field, range
for i = 5, 3 + 2 * n, 2 do
  local max, window
  max = tonumber(ARGV[i])
  if max == nil or max < 1 or max > 10000 or (ARGV[i] ~= '0' and not string.find(ARGV[i], '^%-?[1-9]%d*$')) then
    max = nil
  end
  window = tonumber(ARGV[i + 1])
  if window == nil or window < 1 or window > MAX_TIME or (ARGV[i + 1] ~= '0' and not string.find(ARGV[i + 1], '^%-?[1-9]%d*$')) then
    window = nil
  end
  if max == nil then
    bad, field, range = i, 'max', '[1, 10^4]'
    break
  elseif window == nil then
    bad, field, range = i + 1, 'window', '[1, 2^52]'
    break
  end
  if max > largest then
    largest = max
  end
  if window > widest then
    wide, widest = (i - 3) / 2, window
  end
end
if bad or count < 0 then
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
  if bad then
    return helpers.refuse(KEYS, ARGV, 2, bad, field, range)
  end
  return helpers.fresh(KEYS, ARGV, 2)
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

-- The newest event: the last write's time, and the indexes in the set.
local last, newest, base = nil, 0, 1
local top = redis.pcall('ZRANGE', key, '-1', '-1')
if type(top) == 'table' and top.err then
  return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than ' .. 'zset_log'
    .. ' state (another script\'s state?): ' .. top.err)
end
top = top[1]
if top then
  last, newest, base = member(top)
  if last == nil then
    return redis.error_reply('ERR ratelua: KEYS[1] holds a member that is not a zset_log event')
  end
  if last > now + widest then
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
      last, newest, base = nil, 0, 1
    end
  end
end
local size = newest - base + 1
local stamp = now
if last and last > now then
  stamp = last
end

-- Count each window and decide. A window the newest event is not in holds
-- none; a set of one event holds it in every window the newest is in.
-- counts[i]: the events in limit i's window.
local asked = count
if asked < 1 then
  asked = 1
end
local counts = {}
local allowed = true
for i = 1, n do
  local max, window = tonumber(ARGV[2 * i + 3]), tonumber(ARGV[2 * i + 4])
  local c = 0
  if size > 0 and last > stamp - window then
    if size == 1 then
      c = 1
    else
      c = size - redis.call('ZCOUNT', key, '-inf', format('%d', stamp - window))
    end
  end
  counts[i] = c
  if c + asked > max then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')
local added = 0
local previous = last -- the newest event's time before this call
if record then
  -- More than largest + 1 events at once are recorded as largest + 1: no
  -- reply can tell them apart.
  added = count
  if added > largest + 1 then
    added = largest + 1
  end
  local keep = largest + 1 - added
  if counts[wide] < keep then
    keep = counts[wide]
  end
  local removable = size - keep
  if removable > 0 and removable >= keep then
    redis.call('ZREMRANGEBYRANK', key, '0', format('%d', removable - 1))
    size = keep
  end
  base = newest - size + 1
  local score = format('%d', stamp)
  if added == 1 then
    redis.call('ZADD', key, score, name(score, newest + 1, base))
  else
    local batch = {}
    for first = 1, added, 1000 do
      local b = 0
      for j = first, math.min(first + 999, added) do
        batch[b + 1], batch[b + 2] = score, name(score, newest + j, base)
        b = b + 2
      end
      redis.call('ZADD', key, unpack(batch, 1, b))
    end
  end
  newest, size, last = newest + added, size + added, stamp
  for i = 1, n do
    counts[i] = counts[i] + added
  end
end

-- Reply from the state after this call: when allowed, the limit with the
-- fewest remaining decides; when denied, the one with the longest retry
-- (never first); ties go to the lower index.
local remaining, retry, reset_after, index = nil, 0, 0, 1
local fetched, fetched_time = -1, nil -- the last event read by rank, and its time
for i = 1, n do
  local max, window, c = tonumber(ARGV[2 * i + 3]), tonumber(ARGV[2 * i + 4]), counts[i]
  local left = max - c
  if left < 0 then
    left = 0
  end
  if remaining == nil or left < remaining then
    remaining = left
    if allowed then
      index = i
    end
  end
  if c > 0 then
    local reset = math.max(0, math.min(MAX_TIME, last + window - now))
    if reset > reset_after then
      reset_after = reset
    end
  end
  if not allowed and retry ~= -1 then
    if asked > max then
      retry, index = -1, i
    elseif c + asked > max then
      -- Wait until the (max - asked + 1)-th newest event leaves the window:
      -- one of this call's, the newest before it, or an older one.
      local rank = max - asked
      local time
      if rank < added then
        time = stamp
      elseif rank == added then
        time = previous
      elseif rank == fetched then
        time = fetched_time
      else
        local r = format('%d', rank)
        time = tonumber(match(redis.call('ZRANGE', key, r, r, 'REV')[1], '^(%d+):'))
        fetched, fetched_time = rank, time
      end
      local wait = math.max(0, math.min(MAX_TIME, time + window - now))
      if wait > retry then
        retry, index = wait, i
      end
    end
  end
end
if record then
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
  redis.call('PEXPIRE', key, ttl)
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
end)
end
