-- ratelua ar1 v5: exponentially decaying counts (AR(1)), several limits in
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
-- below 1/1000 of an event becomes 0. Events are allowed when
-- c + eventCount <= max for every limit. Powers are computed by repeated
-- squaring; a boundary is estimated with a logarithm and then decided by an
-- exact check of that same arithmetic. Fresh means every count is 0;
-- reset_after is the time until then. remaining is floor(max - c). The
-- executable specification is internal/model/ar1.go; v5 replies as v4
-- and v3 do to every call.
--
-- State with one limit (the common case): a string "<time> <count>" in
-- unit ms, "<time> <count> s" in unit s, "<time> <count> us" in unit us,
-- where time is the last write in the unit and count is written as %.17g.
-- The limits are not stored: every call checks them. A call with other
-- limits (same unit) carries the state over: the count is decayed from the
-- stored time with the new decay and resolution and compared with the new
-- max (events recorded stay counted; a count above the new max denies until
-- it decays). A call in another unit, or with another number of limits,
-- starts fresh (the layouts differ).
--
-- State with two or more limits: v4's, a string "<limits>|<time> <c_1> ...
-- <c_n>" where <limits> is ARGV[2] and ARGV[5..] joined by spaces, exactly
-- as the call that wrote it sent them (a call with other limits or another
-- unit starts fresh; a call with the same ones need not check them again),
-- time is the last write in the unit and the counts are written as %.17g.
--
-- TTL: reset_after. A now earlier than the last write is treated as the
-- time of the last write. The key must be written by this script only.
--
-- What v5 does apart from v4: one limit's state is the time and the count,
-- without the limits text (a smaller value, and no limits text to build,
-- find and write on each call); the call checks its three limit integers
-- inline instead (tonumber, range and one anchored find each). Two or more
-- limits: as v4. v4's and v5's states do not mix (state version 5): either
-- reads the other's one-limit state as absent.

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

local EPSILON = 0.001

-- decayed returns count after k >= 0 boundaries with the factor: count
-- divided by factor^k (by repeated squaring), 0 below EPSILON.
local function decayed(count, factor, k)
  local power = 1
  while k > 0 do
    if k % 2 == 1 then
      power = power * factor
    end
    factor = factor * factor
    k = math.floor(k / 2)
  end
  count = count / power
  if count < EPSILON then
    return 0
  end
  return count
end

-- boundaries returns the fewest k >= 1 boundaries after which
-- decayed(count, factor, k) + asked <= max (count > 0, asked <= max).
local function boundaries(count, factor, asked, max)
  local room = max - asked
  if room < EPSILON then
    room = EPSILON
  end
  local k = 1
  if count > room then
    k = math.ceil(math.log(count / room) / math.log(factor))
    if k < 1 then
      k = 1
    end
  end
  while decayed(count, factor, k) + asked > max do
    k = k + 1
  end
  while k > 1 and decayed(count, factor, k - 1) + asked <= max do
    k = k - 1
  end
  return k
end

-- limits_error checks the n limits in ARGV: the error reply for the first
-- bad one, or nil when every limit is valid.
local function limits_error(KEYS, ARGV, n)
  for i = 5, 2 + 3 * n, 3 do
    if integer(ARGV[i], 1, 1000000000) == nil then
      return rare().refuse(KEYS, ARGV, 3, i, 'max', '[1, 10^9]')
    elseif integer(ARGV[i + 1], 1001, 1000000000) == nil then
      return rare().refuse(KEYS, ARGV, 3, i + 1, 'decay', '[1001, 10^9]')
    elseif integer(ARGV[i + 2], 1, MAX_TIME) == nil then
      return rare().refuse(KEYS, ARGV, 3, i + 2, 'resolution', '[1, 2^52]')
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
  -- One limit: the state is "<time> <count>" (plus " s" or " us" in those
  -- units). The limits are checked on every call.
  local max, decay, resolution = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
  if not (max and decay and resolution and max >= 1 and max <= 1000000000
      and decay >= 1001 and decay <= 1000000000 and resolution >= 1 and resolution <= MAX_TIME
      and format('%d', max) == ARGV[5] and format('%d', decay) == ARGV[6]
      and format('%d', resolution) == ARGV[7]) then
    return limits_error(KEYS, ARGV, 1)
  end
  local pattern, layout, integral = '^(%d+) ([^ ]+)$', '%d %.17g', '%d %d'
  if unit == 's' then
    pattern, layout, integral = '^(%d+) ([^ ]+) s$', '%d %.17g s', '%d %d s'
  elseif unit == 'us' then
    pattern, layout, integral = '^(%d+) ([^ ]+) us$', '%d %.17g us', '%d %d us'
  end
  local state = redis.call('GET', key)
  local last, c
  if state then
    local time, stored = string.match(state, pattern)
    if time then
      last, c = tonumber(time), tonumber(stored)
      if c == nil then
        last = nil
      end
    end
  end
  local factor = decay / 1000
  now = now or server_now(unit)
  local stamp = now
  if last == nil then
    c = 0
  else
    if last > now then
      stamp = last
    end
    c = decayed(c, factor, floor(stamp / resolution) - floor(last / resolution))
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
  local slot_start = floor(stamp / resolution) * resolution
  local remaining, reset_after = floor(max - c), 0
  if remaining < 0 then
    remaining = 0
  end
  if c > 0 then
    reset_after = math.max(0, math.min(MAX_TIME, slot_start + boundaries(c, factor, 0, 0) * resolution - now))
  end
  if record then
    -- ttl_ms inline for ms (a call less).
    local ttl = reset_after
    if unit ~= 'ms' then
      ttl = ttl_ms(unit, reset_after)
    elseif ttl < 1 then
      ttl = '1'
    else
      ttl = format('%d', ttl)
    end
    -- A whole count is written by '%d' (the same text as '%.17g' below
    -- 10^15, and much cheaper).
    if c % 1 == 0 and c < 1000000000000000 then
      layout = integral
    end
    redis.call('SET', key, format(layout, stamp, c), 'PX', ttl)
  end
  if allowed then
    return { 1, remaining, 0, reset_after, 1 }
  end
  local retry = -1
  if asked <= max then
    retry = math.max(0, math.min(MAX_TIME, slot_start + boundaries(c, factor, asked, max) * resolution - now))
  end
  return { 0, remaining, retry, reset_after, 1 }
end

-- Two or more limits. The state counts only if it was written for these limits, which were
-- checked then. counts[i]: limit i's count (as stored, then at stamp).
local limits = unit .. ' ' .. table.concat(ARGV, ' ', 5)
local state = redis.call('GET', key)
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
    c = decayed(tonumber(counts[i]), tonumber(ARGV[arg + 1]) / 1000, floor(stamp / resolution) - floor(last / resolution))
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
    local reset = math.max(0, math.min(MAX_TIME, slot_start + boundaries(c, factor, 0, 0) * resolution - now))
    if reset > reset_after then
      reset_after = reset
    end
  end
  if not allowed and retry ~= -1 then
    if asked > max then
      retry, index = -1, i
    elseif c + asked > max then
      local wait = math.max(0, math.min(MAX_TIME, slot_start + boundaries(c, factor, asked, max) * resolution - now))
      if wait > retry then
        retry, index = wait, i
      end
    end
  end
end
if record then
  state = format('%s|%d' .. string.rep(' %.17g', n), limits, stamp, unpack(counts, 1, n))
  redis.call('SET', key, state, 'PX', ttl_ms(unit, reset_after))
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
