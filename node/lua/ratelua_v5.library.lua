#!lua name=ratelua_v5
-- Generated from lua/src by luagen: every v5 script as a function with
-- the same KEYS/ARGV/reply contract (FCALL <function> 1 <key> <ARGV...>).
-- The shared prelude and each script's helpers run once per FUNCTION LOAD;
-- a function's body is its script's text after the script's '-- #call' line.

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

-- ar1 v5 (lua/ar1.v5.lua)
do
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

redis.register_function('ratelua_ar1_v5', function(KEYS, ARGV)
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
end)
end

-- concurrency v5 (lua/concurrency.v5.lua)
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

redis.register_function('ratelua_concurrency_v5', function(KEYS, ARGV)
local tonumber, format = tonumber, string.format
local unit, mode, now = ARGV[2], ARGV[4], false
local count = 1
if ARGV[1] ~= '1' then
  count = integer(ARGV[1], -MAX_TIME, MAX_TIME)
end
if ARGV[3] ~= '' then
  -- Canonical: what '%d' writes back.
  now = tonumber(ARGV[3])
  if not (now and now >= 0 and now <= MAX_TIME and format('%d', now) == ARGV[3]) then
    now = nil
  end
end
if count == nil or now == nil or #KEYS ~= 1 or (unit ~= 'ms' and unit ~= 's' and unit ~= 'us') then
  return rare().refuse(KEYS, ARGV, 2)
end
local acquire = mode == '0'
if not acquire and mode ~= 'renew' and mode ~= 'release' then
  return refused(ARGV, 4, "mode must be '0' (acquire), 'renew' or 'release'")
end
if not acquire and (count < 1 or count > 1000000) then
  return refused(ARGV, 1, 'eventCount must be the slots of the lease, an integer in [1, 10^6], in mode ' .. mode)
end
if acquire and #ARGV ~= 6 then
  return redis.error_reply("ERR ratelua: expected 2 arguments after ARGV[4] in mode '0' (max, lease), got " .. math.max(#ARGV - 4, 0))
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

-- A reset drops every lease and keeps the counter, with its TTL.
if acquire and count < 0 then
  redis.call('ZREMRANGEBYSCORE', key, '0', '+inf')
  return { 1, max, 0, 0, 0 }
end

local id
if not acquire then
  id = tonumber(ARGV[7])
  if not (id and id >= 1 and id <= MAX_TIME and format('%d', id) == ARGV[7]) then
    return refused(ARGV, 7, 'the lease id must be a canonical integer in [1, 2^52]')
  end
end
now = now or server_now(unit)
local live = format('(%d', now)

if acquire then
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
    id = -tonumber(redis.call('ZINCRBY', key, '-1', '#'))
    local expiry = format('%d', now + lease)
    local name = format('%d', id)
    if count == 1 then
      redis.call('ZADD', key, expiry, name)
    else
      each_member({ 'ZADD', key }, name, count, expiry)
    end
    local reset_after = until_last(key, now)
    -- A fresh key (id 1) has no TTL yet: GT would treat it as infinite.
    if id == 1 then
      redis.call('PEXPIRE', key, ttl_ms(unit, reset_after))
    else
      redis.call('PEXPIRE', key, ttl_ms(unit, reset_after), 'GT')
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
-- exist; the slots of one lease always share one score.
local name = ARGV[7]
local scores
if count == 1 then
  scores = redis.call('ZMSCORE', key, name, name .. '.2')
else
  scores = redis.call('ZMSCORE', key, name, format('%s.%d', name, count), format('%s.%d', name, count + 1))
end
local held = scores[1] and tonumber(scores[1]) > now and scores[#scores - 1] and not scores[#scores]
if held then
  if mode == 'renew' then
    local expiry = format('%d', now + lease)
    if count == 1 then
      redis.call('ZADD', key, 'XX', 'GT', expiry, name)
    else
      each_member({ 'ZADD', key, 'XX', 'GT' }, name, count, expiry)
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
  redis.call('PEXPIRE', key, ttl_ms(unit, reset_after), 'GT')
end
return { 1, remaining, 0, reset_after, id }
end)
end

-- sliding_window v5 (lua/sliding_window.v5.lua)
do
-- read_call checks KEYS and ARGV[1..4] and counts the limits of `group`
-- integers after them: it returns eventCount, now (false for the server
-- clock) and the number of limits, or nil when anything is wrong (refuse
-- then says what).
local function read_call(KEYS, ARGV, group)
  local count = 1
  if ARGV[1] ~= '1' then
    count = integer(ARGV[1], -MAX_TIME, MAX_TIME)
  end
  local unit, now, mode = ARGV[2], false, ARGV[4]
  if ARGV[3] ~= '' then
    now = integer(ARGV[3], 0, MAX_TIME)
  end
  local arguments = #ARGV - 4
  if count == nil or now == nil or #KEYS ~= 1 or (unit ~= 'ms' and unit ~= 's' and unit ~= 'us')
    or (mode ~= '0' and mode ~= '1') or arguments < group or arguments % group ~= 0
    or arguments > group * MAX_LIMITS then
    return nil
  end
  return count, now, arguments / group
end

-- Floor division without a function call: for integers 0 <= a and
-- 0 < b with a + b <= 2^53, r = a % b (Lua: a - floor(a / b) * b, each step
-- exact) is the remainder give or take b, as the float quotient is floor or
-- floor + 1; after "if r < 0 then r = r + b elseif r >= b then r = r - b
-- end", r = a mod b and (a - r) / b = floor(a / b), exactly.

-- bound limits a reported duration to [0, 2^52].
local function bound(duration)
  if duration > MAX_TIME then
    return MAX_TIME
  elseif duration < 0 then
    return 0
  end
  return duration
end

-- limits_error checks the n limits in ARGV: the error reply for the first
-- bad one, or nil when every limit is valid.
local function limits_error(KEYS, ARGV, n)
  for i = 5, 2 + 3 * n, 3 do
    if integer(ARGV[i], 1, 1000000000) == nil then
      return rare().refuse(KEYS, ARGV, 3, i, 'max', '[1, 10^9]')
    elseif integer(ARGV[i + 1], 1, MAX_TIME) == nil then
      return rare().refuse(KEYS, ARGV, 3, i + 1, 'duration', '[1, 2^52]')
    elseif integer(ARGV[i + 2], 1, MAX_TIME) == nil then
      return rare().refuse(KEYS, ARGV, 3, i + 2, 'resolution', '[1, 2^52]')
    end
  end
  for i = 5, 2 + 3 * n, 3 do
    local duration, resolution = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    if resolution > duration then
      return redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3 .. ': resolution must be at most duration, got '
        .. string.format('%d > %d', resolution, duration))
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
      return redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3
        .. ': duration / resolution must be at most 10000 buckets, got ' .. string.format('%d', buckets))
    end
  end
  return nil
end

redis.register_function('ratelua_sliding_window_v5', function(KEYS, ARGV)
local tonumber, format, match = tonumber, string.format, string.match
local count, now, n = read_call(KEYS, ARGV, 3)
if count == nil then
  return rare().refuse(KEYS, ARGV, 3)
end
local unit, mode, key = ARGV[2], ARGV[4], KEYS[1]
if count < 0 then
  return limits_error(KEYS, ARGV, n) or rare().fresh(KEYS, ARGV, 3)
end

-- The last write: its time, and per limit the ring's total, span, lag and
-- newest count, if it was written for these limits (checked then).
local limits
if n == 1 then
  limits = unit .. ' ' .. ARGV[5] .. ' ' .. ARGV[6] .. ' ' .. ARGV[7]
else
  limits = unit .. ' ' .. table.concat(ARGV, ' ', 5)
end
local stored = redis.call('HMGET', key, 'l', 'm')
local meta = stored[2]

-- One limit, the common case: the state was written for this limit, its
-- ring has not left, no bucket leaves it now, the window needs no bucket
-- but the newest (all in "m"), and no retry has to be found on the chain.
-- Any other call goes on to the general code below (which reads "m" again).
if n == 1 and meta and stored[1] == limits then
  local time, total, span, lag, top = match(meta, '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
  if time and total ~= '0' then
    -- (text + 0 is the number of a canonical integer without a call)
    local max, duration, resolution = ARGV[5] + 0, ARGV[6] + 0, ARGV[7] + 0
    local last = time + 0
    now = now or server_now(unit)
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
    local lo = w + lag + 1 - buckets
    if lo < first then
      lo = first
    end
    local low = head - q
    if into < part then
      low = low - 1
    end
    local partial = edge + 1
    local asked = count
    if asked < 1 then
      asked = 1
    end
    if w > edge and edge < lo and not (low == partial and partial < w and partial >= first) then
      total = total + 0
      local wc = top + 0
      local window = total
      if low == partial and first == partial then
        window = total - wc -- partial == w: the ring holds bucket w alone
      end
      local allowed = window + asked <= max
      local record = count > 0 and (allowed or mode == '1')
      -- A denied call that records nothing and whose ring holds bucket w
      -- alone retries when w leaves the window (no walk).
      if allowed or asked > max or (first == w and not record) then
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
          meta = format('%d %d %d 0 %d', stamp, total, head - first, updated)
          if spilled then
            redis.call('HSET', key, 'm', meta, format('1.%d', w % buckets), spilled)
          else
            redis.call('HSET', key, 'm', meta)
          end
          w = head
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
          redis.call('PEXPIRE', key, ttl_ms(unit, reset_after))
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
        local retry = w * resolution + duration - now
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

-- Several limits, the same common case for every limit, in two passes over
-- the limits with the values of limit i in f[10 * (i - 1) + 1 .. + 10]:
-- max, duration, resolution, N, head, w, oldest, total, count of w, window.
-- Any limit outside the common case sends the call to the general code.
if n > 1 and meta and stored[1] == limits then
  local time, at = match(meta, '^(%d+)()')
  local simple = time ~= nil
  local last = 0
  if simple then
    last = time + 0
    now = now or server_now(unit)
  end
  local stamp = now
  if last > now then
    stamp = last
  end
  local asked = count
  if asked < 1 then
    asked = 1
  end
  local allowed, never, walk = true, false, false
  local f = {
    nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
    nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
    nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
  }
  local j = 0
  for arg = 5, 2 + 3 * n, 3 do
    if not simple then
      break
    end
    local total, span, lag, top
    total, span, lag, top, at = match(meta, '^ (%d+) (%d+) (%d+) (%d+)()', at)
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
    local lo = w + lag + 1 - buckets
    if lo < first then
      lo = first
    end
    local low = head - q
    if into < part then
      low = low - 1
    end
    local partial = edge + 1
    if w <= edge or edge >= lo or (low == partial and partial < w and partial >= first) then
      simple = false
      break
    end
    total = total + 0
    local wc = top + 0
    local window = total
    if low == partial and first == partial then
      window = total - wc -- partial == w: the ring holds bucket w alone
    end
    if window + asked > max then
      allowed = false
    end
    if asked > max then
      never = true
    elseif window + asked > max and first ~= w then
      walk = true -- its retry needs the chain
    end
    f[j + 1], f[j + 2], f[j + 3], f[j + 4], f[j + 5] = max, duration, resolution, buckets, head
    f[j + 6], f[j + 7], f[j + 8], f[j + 9], f[j + 10] = w, first, total, wc, window
    j = j + 10
  end
  -- A denied call needs no retry walk when some limit can never admit
  -- `asked` events (retry_after is -1 and that limit decides), or when it
  -- records nothing and every limit over its max holds bucket w alone (it
  -- retries when w leaves the window).
  local record = count > 0 and (allowed or mode == '1')
  if simple and at == #meta + 1 and (allowed or never or not (walk or record)) then
    local written = { 'm', false } -- HSET's arguments
    local h = 2
    local mb = 10 * n -- f[mb + 1 .. mb + 4 * n]: the meta words
    local remaining, retry, reset_after, index = nil, 0, 0, 1
    for i = 1, n do
      local o = 10 * (i - 1)
      local max, duration, resolution, buckets, head = f[o + 1], f[o + 2], f[o + 3], f[o + 4], f[o + 5]
      local w, first, total, wc, window = f[o + 6], f[o + 7], f[o + 8], f[o + 9], f[o + 10]
      if record then
        local current = 0
        if w == head then
          current = wc
        else
          -- Spill bucket w to its field, linked to head.
          written[h + 1] = format(format('%d.%%d', i), w % buckets)
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
          local r = w * resolution + duration - now
          if r > MAX_TIME then
            r = MAX_TIME
          end
          if r > retry then
            retry, index = r, i
          end
        end
      end
      local a = mb + 4 * i
      f[a - 3], f[a - 2], f[a - 1], f[a] = total, w - first, head - w, wc
    end
    if record then
      written[2] = format('%d' .. string.rep(' %d %d %d %d', n), stamp, unpack(f, mb + 1, mb + 4 * n))
      redis.call('HSET', key, unpack(written, 1, h))
      redis.call('PEXPIRE', key, ttl_ms(unit, reset_after))
    end
    if allowed then
      return { 1, remaining, 0, reset_after, index }
    end
    return { 0, remaining, retry, reset_after, index }
  end
end

-- Offsets of a limit's values in the table t (see below).
local MAX, DURATION, RESOLUTION, BUCKETS, WHOLE, PART, TOTAL, SPAN, LAG, HEAD = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
local LOW, NEWEST, OLDEST, LEAVING, LEAVING_AT, WINDOW, NEWEST_COUNT = 11, 12, 13, 14, 15, 16, 17
local PARTIAL_VALUE, FIELD_FORMAT = 18, 19

-- One flat table t. Limit i owns t[o + MAX .. o + FIELD_FORMAT],
-- o = 20 * (i - 1): MAX, DURATION, RESOLUTION; BUCKETS, N; WHOLE and PART,
-- floor(duration / resolution) and duration mod resolution; TOTAL, SPAN,
-- LAG and NEWEST_COUNT, the ring's meta words; HEAD, the bucket of the
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

local last, at = nil, nil
if meta and stored[1] == limits then
  last, at = match(meta, '^(%d+)()')
end
if last == nil then
  local bad = limits_error(KEYS, ARGV, n)
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
    local total, span, lag, newest
    total, span, lag, newest, at = match(meta, '^ (%d+) (%d+) (%d+) (%d+)()', at)
    if total == nil then
      last = nil
    else
      t[o + TOTAL], t[o + SPAN], t[o + LAG], t[o + NEWEST_COUNT] = total + 0, span + 0, lag + 0, newest + 0
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
now = now or server_now(unit)
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
  if into < t[o + PART] then
    low = low - 1
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
      local lo = w + t[o + LAG] + 1 - buckets
      if lo < first then
        lo = first
      end
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
local mb = base + 2 * n -- t[mb + 1 .. mb + 4 * n]: the meta words
local rb = base + 6 * n -- t[rb + 1 ..]: the fields read ahead
local remaining, retry, reset_after, index = nil, 0, 0, 1
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
    r = bound(b * resolution + duration - now)
  end
  if window > 0 then
    local reset = bound(written * resolution + duration - now)
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
    local a = mb + 4 * i
    if first then
      t[a - 3], t[a - 2], t[a - 1], t[a] = total, written - first, head - written, top
    else
      t[a - 3], t[a - 2], t[a - 1], t[a] = 0, 0, 0, 0
    end
  end
end

-- Write what was recorded, or, when this call had to read many buckets
-- leaving the rings, the advanced rings alone so that the next calls need
-- not read them again (the key keeps its TTL).
if save then
  local time = last
  if record then
    time = stamp
  end
  if n == 1 then
    meta = format('%d %d %d %d %d', time, t[mb + 1], t[mb + 2], t[mb + 3], t[mb + 4])
  else
    meta = format('%d' .. string.rep(' %d %d %d %d', n), time, unpack(t, mb + 1, mb + 4 * n))
  end
  if last == nil then
    redis.call('HSET', key, 'l', limits, 'm', meta, unpack(t, base + 1, k))
  else
    redis.call('HSET', key, 'm', meta, unpack(t, base + 1, k))
  end
  if record then
    redis.call('PEXPIRE', key, ttl_ms(unit, reset_after))
  end
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
end)
end

-- token_bucket v5 (lua/token_bucket.v5.lua)
do
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

redis.register_function('ratelua_token_bucket_v5', function(KEYS, ARGV)
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
end)
end

-- zset_log v5 (lua/zset_log.v5.lua)
do
redis.register_function('ratelua_zset_log_v5', function(KEYS, ARGV)
local tonumber, floor, format, match = tonumber, math.floor, string.format, string.match
local count, now = 1, false
if ARGV[1] ~= '1' then
  count = integer(ARGV[1], -MAX_TIME, MAX_TIME)
end
if ARGV[3] ~= '' then
  -- Canonical: what '%d' writes back (a string equal to ARGV[3] is
  -- interned already, so this makes no new string).
  now = tonumber(ARGV[3])
  if not (now and now >= 0 and now <= MAX_TIME and format('%d', now) == ARGV[3]) then
    now = nil
  end
end
local n = (#ARGV - 4) / 2
if count == nil or now == nil or #KEYS ~= 1 or (ARGV[2] ~= 'ms' and ARGV[2] ~= 's' and ARGV[2] ~= 'us')
  or (ARGV[4] ~= '0' and ARGV[4] ~= '1') or (n ~= 1 and (n < 1 or n > MAX_LIMITS or n % 1 ~= 0)) then
  return rare().refuse(KEYS, ARGV, 2)
end
local unit, mode, key = ARGV[2], ARGV[4], KEYS[1]

-- One limit, the common case, with locals only: the limit is checked
-- inline (its '%d' text must be ARGV's), the window is counted from the
-- newest event and the oldest event inside the window (indexes are
-- consecutive, so count = newest index - oldest index + 1), and a denied
-- reply whose retry event is that oldest one (at saturation in mode 0)
-- needs no other read. Bad limits go on to the general code, which
-- refuses them.
if n == 1 then
  local max, window = tonumber(ARGV[5]), tonumber(ARGV[6])
  if max and window and max >= 1 and max <= 1000000 and window >= 1 and window <= MAX_TIME
    and format('%d', max) == ARGV[5] and format('%d', window) == ARGV[6] then
    if count < 0 then
      return rare().fresh(KEYS, ARGV, 2)
    end
    now = now or server_now(unit)
    local last, newest, size = nil, 0, 0
    local top = redis.call('ZRANGE', key, '-1', '-1')[1]
    if top then
      local time, index, base = match(top, '^(%d+):%l(%d+):(%d+)$')
      if time == nil then
        return redis.error_reply('ERR ratelua: KEYS[1] holds a member that is not a zset_log event')
      end
      -- (text + 0 is the number of a digit string without a call)
      last, newest = time + 0, index + 0
      size = newest - base + 1
    end
    local stamp = now
    if last and last > now then
      stamp = last
    end
    -- c: the events in the window; first: the oldest of them (its name).
    local c, first = 0, nil
    if size > 0 and last > stamp - window then
      if size == 1 then
        c, first = 1, top
      else
        local oldest = redis.call('ZRANGE', key, format('(%d', stamp - window), '+inf', 'BYSCORE', 'LIMIT', '0', '1')[1]
        local index = match(oldest, '^%d+:%l(%d+):')
        if index == nil then
          return redis.error_reply('ERR ratelua: KEYS[1] holds a member that is not a zset_log event')
        end
        c, first = newest - index + 1, oldest
      end
    end
    local asked = count
    if asked < 1 then
      asked = 1
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
      local score = ARGV[3]
      if stamp ~= now or score == '' then
        score = format('%d', stamp)
      end
      -- Member names: the index after a letter for its number of digits.
      local index = newest + 1
      local digits, ten = 1, 10
      while index >= ten do
        digits, ten = digits + 1, ten * 10
      end
      if added == 1 then
        redis.call('ZADD', key, score, format('%s:%s%d:%d', score, string.char(96 + digits), index, base))
      else
        local batch = {}
        local b = 0
        for j = index, newest + added do
          if j >= ten then
            digits, ten = digits + 1, ten * 10
          end
          batch[b + 1], batch[b + 2] = score, format('%s:%s%d:%d', score, string.char(96 + digits), j, base)
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
      -- ttl_ms inline for ms (a call less); reset_after >= 1 here.
      local ttl
      if unit == 'ms' then
        ttl = ARGV[6]
        if reset_after ~= window then
          ttl = format('%d', reset_after)
        end
      else
        ttl = ttl_ms(unit, reset_after)
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
    -- one of this call's, the newest before it, the oldest in the window,
    -- or another one (read by rank).
    local rank = max - asked
    local time
    if rank < added then
      time = stamp
    elseif rank == added then
      time = previous
    elseif rank == c - 1 then
      time = match(first, '^%d+') + 0
    else
      local r = format('%d', rank)
      time = match(redis.call('ZRANGE', key, r, r, 'REV')[1], '^(%d+):') + 0
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

-- The general code: several limits, or a bad limit to refuse.

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
local largest, wide, widest = 0, 1, 0
for i = 5, 3 + 2 * n, 2 do
  local max = integer(ARGV[i], 1, 1000000)
  if max == nil then
    return rare().refuse(KEYS, ARGV, 2, i, 'max', '[1, 10^6]')
  end
  local window = integer(ARGV[i + 1], 1, MAX_TIME)
  if window == nil then
    return rare().refuse(KEYS, ARGV, 2, i + 1, 'window', '[1, 2^52]')
  end
  if max > largest then
    largest = max
  end
  if window > widest then
    wide, widest = (i - 3) / 2, window
  end
end
if count < 0 then
  return rare().fresh(KEYS, ARGV, 2)
end
now = now or server_now(unit)

-- The newest event: the last write's time, and the indexes in the set.
local last, newest, base = nil, 0, 1
local top = redis.call('ZRANGE', key, '-1', '-1')[1]
if top then
  last, newest, base = member(top)
  if last == nil then
    return redis.error_reply('ERR ratelua: KEYS[1] holds a member that is not a zset_log event')
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
      c = redis.call('ZCOUNT', key, format('(%d', stamp - window), '+inf')
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
  redis.call('PEXPIRE', key, ttl_ms(unit, reset_after))
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
end)
end
