-- ratelua ar1 v6: exponentially decaying counts (AR(1)), several limits in
-- one key.
--
-- KEYS[1]  the state key (the only key read or written)
-- ARGV[1]  eventCount: > 0 add that many events and decide; 0 decide
--          whether one more event would pass (writes nothing); < 0 delete
--          the state and reply as for a fresh key
-- ARGV[2]  unit of now and of every duration: 's', 'ms' or 'us'
-- ARGV[3]  now in that unit, or '' for the server clock (TIME)
-- ARGV[4]  mode: '0' a denied call adds nothing to any count;
--          '1' every call adds its events, allowed or not
-- ARGV[5..] 1 to 16 limits of three integers:
--          max         events allowed in the decayed count, 1..10^9
--          decay       divisor applied at each resolution boundary, in
--                      thousandths (2000 = halve), 1001..10^9
--          resolution  the decay period in the unit, 1..2^52
-- reply    {allowed, remaining, retry_after, reset_after, limit_index}
--
-- Every integer is canonical decimal text: '0', or an optional '-' then a
-- digit 1-9 then digits ('-0', '+1', '007', ' 1', '1e3' are refused). Bad
-- input is an error reply 'ERR ratelua: ...' naming the argument, and
-- writes nothing.
--
-- Each limit keeps a count c. At every boundary of its resolution (t
-- crossing a multiple of resolution) c is divided by decay/1000; a count
-- below 1/1000 of an event is 0. Events are allowed when
-- c + eventCount <= max for every limit. Powers are computed by repeated
-- squaring; a boundary is estimated with a logarithm and then decided by an
-- exact check of that same arithmetic. Fresh means every count is 0;
-- reset_after is the time until then. remaining is floor(max - c). The
-- executable specification is internal/model/ar1.go; for limits that do
-- not change on a key, v6 replies as v5 does to every call.
--
-- State with one limit (the common case): the boundary index of the last
-- write, b = floor(time / resolution), and the count there: one integer
-- b * 2^20 + count when the count is whole and below 2^20 and b < 2^33
-- (the server keeps it in 16 bytes, as a counter), else a string
-- "<b>:<count>", the count written as %.17g (by %d when whole). The
-- decay only depends on boundaries, so the index is all the time that
-- is kept. The limits and the unit are not stored: every call checks the
-- limits. A call with another unit but the same resolution as a duration
-- (1000 in ms, 1 in s) reads the same state. A call with another
-- resolution reads the index as its own: the Go API never does (its key
-- names the limits); a raw caller changing a key's resolution should reset
-- it first (eventCount < 0): with a shorter resolution the count is
-- decayed over more boundaries than passed, with a longer one the stored
-- index lies ahead of now, so the count does not decay before then and
-- the waits replied count from there (as for a clock behind, below). A
-- call with other max or decay carries the count over, decayed with the
-- new decay and compared with the new max. A call with another number of
-- limits starts fresh (the layouts differ).
--
-- State with two or more limits: v4's and v5's, a string "<limits>|<time>
-- <c_1> ... <c_n>" where <limits> is ARGV[2] and ARGV[5..] joined by
-- spaces, exactly as the call that wrote it sent them (a call with other
-- limits or another unit starts fresh; a call with the same ones need not
-- check them again), time is the last write in the unit and the counts are
-- written as %.17g.
--
-- TTL: reset_after. A now earlier than the last write is treated as the
-- time of the last write (with one limit: a now whose boundary is before
-- the last write's is treated as at that boundary; the replies are the
-- same). The key must be written by this script only.
--
-- What v6 does apart from v5: one limit's state is the boundary index and
-- the count, most often one integer (a value as small as a counter's),
-- without the unit suffix; a call builds no function (the prelude's
-- helpers and decayed, boundaries and the limits check are macros
-- expanded in place). Replies are v5's for limits that do not change on a
-- key. v5's and v6's states do not mix (state version 6): the Go API's
-- keys differ, and either script reads the other's one-limit state as
-- absent (v6's has no space, v5's has one).

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

local EPSILON = 0.001
-- ONE_INTEGER is 2^20: a one-limit state '<boundary> * 2^20 + <count>' is
-- one integer below 2^53 (boundary < 2^33, a whole count < 2^20).
local ONE_INTEGER = 1048576

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
