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

-- ratelua v2 prelude, shared by every v2 script (generated into each
-- released file; do not edit there). v2 keeps v1's contract and replies and
-- is written for the server's cost: one flat table for the limits instead
-- of a table per limit or outcome, a handful of local functions, numbers
-- turned into strings by string.format (never by '..' or tostring, and never
-- passed to redis.call as numbers), and a limits signature folded from the
-- parsed integers instead of SHA1.
local MAX_TIME = 4503599627370496 -- 2^52: bound of now, durations and replies
local MAX_LIMITS = 16
local tonumber, floor = tonumber, math.floor

local function fail(msg)
  return redis.error_reply('ERR ratelua: ' .. msg)
end

-- got quotes an argument for an error message.
local function got(value)
  if type(value) ~= 'string' then
    return 'nothing'
  end
  if #value > 40 then
    value = string.sub(value, 1, 40) .. '...'
  end
  return "'" .. value .. "'"
end

-- int returns ARGV[i] as an integer in [lo, hi], or nil: an optional '-'
-- and decimal digits, at most 20 characters, as in v1.
local function int(i, lo, hi)
  local s = ARGV[i]
  if s == nil then
    return nil
  end
  local n = tonumber(s)
  if n == nil or n < lo or n > hi or #s > 20 or not string.find(s, '^%-?%d+$') then
    return nil
  end
  return n
end

-- header validates KEYS and ARGV[1..4] and counts the limits of `group`
-- integers after them. It returns eventCount, the unit, now (nil for the
-- server clock), the mode, the number of limits and the signature's seed
-- (the unit); or nil and an error reply.
local function header(group)
  if #KEYS ~= 1 then
    return nil, fail('expected exactly 1 key (the state key), got ' .. #KEYS)
  end
  local count = int(1, -MAX_TIME, MAX_TIME)
  if count == nil then
    return nil, fail('ARGV[1] eventCount must be an integer in [-2^52, 2^52], got ' .. got(ARGV[1]))
  end
  local unit = ARGV[2]
  if unit ~= 'ms' and unit ~= 's' and unit ~= 'us' then
    return nil, fail("ARGV[2] unit must be 's', 'ms' or 'us', got " .. got(unit))
  end
  local now = nil
  if ARGV[3] ~= '' then
    now = int(3, 0, MAX_TIME)
    if now == nil then
      return nil, fail('ARGV[3] now must be empty (server clock) or an integer in [0, 2^52], got ' .. got(ARGV[3]))
    end
  end
  local mode = ARGV[4]
  if mode ~= '0' and mode ~= '1' then
    return nil, fail("ARGV[4] mode must be '0' (count allowed events) or '1' (count every attempt), got " .. got(mode))
  end
  local nargs = #ARGV - 4
  if nargs < group or nargs % group ~= 0 or nargs / group > MAX_LIMITS then
    return nil, fail('expected 1 to ' .. MAX_LIMITS .. ' limits of ' .. group .. ' integers after ARGV[4], got '
      .. math.max(nargs, 0) .. ' arguments')
  end
  local sig = 3
  if unit == 's' then
    sig = 1
  elseif unit == 'ms' then
    sig = 2
  end
  return count, unit, now, mode, nargs / group, sig
end

-- A script folds every limit integer v into the signature its state keeps,
-- sig = (sig * 31 + v) % 4294967291, so that a key called with other limits
-- starts fresh. The steps are exact: below 2^32 * 31 + 2^52 < 2^53.

-- limit_error is the reply for the bad limit argument ARGV[i], the limit's
-- field `name` with the range `range` in words.
local function limit_error(i, group, name, range)
  return fail('ARGV[' .. i .. '] (limit ' .. floor((i - 5) / group) + 1 .. ' ' .. name .. ') must be an integer in '
    .. range .. ', got ' .. got(ARGV[i]))
end

-- server_now is the server's TIME in the unit.
local function server_now(unit)
  local time = redis.call('TIME')
  local seconds = tonumber(time[1])
  if unit == 's' then
    return seconds
  elseif unit == 'ms' then
    return seconds * 1000 + floor(tonumber(time[2]) / 1000)
  end
  return seconds * 1000000 + tonumber(time[2])
end

-- floor_div is floor(a / b), exactly, for integers a and b > 0 below 2^53.
local function floor_div(a, b)
  local q = floor(a / b)
  if q * b > a then
    return q - 1
  elseif (q + 1) * b <= a then
    return q + 1
  end
  return q
end

-- ttl_ms converts a positive duration in the unit to whole milliseconds,
-- rounded up, within [1, 2^52].
local function ttl_ms(unit, duration)
  local ms = duration
  if unit == 'us' then
    ms = -floor_div(-duration, 1000)
  elseif unit == 's' then
    ms = duration * 1000
  end
  if ms > MAX_TIME then
    return MAX_TIME
  elseif ms < 1 then
    return 1
  end
  return ms
end

-- cap bounds a reported duration to [0, 2^52].
local function cap(duration)
  if duration > MAX_TIME then
    return MAX_TIME
  elseif duration < 0 then
    return 0
  end
  return duration
end

-- reset deletes the state and replies as for a fresh key: every limit
-- admits, and remaining is the smallest limit size, the first of the
-- `stride` values each limit has in lim from index 1.
local function reset(lim, stride, n)
  redis.call('DEL', KEYS[1])
  local remaining = lim[1]
  for i = 1 + stride, 1 + stride * (n - 1), stride do
    if lim[i] < remaining then
      remaining = lim[i]
    end
  end
  return { 1, remaining, 0, 0, 0 }
end

-- read_values reads a string state "<time> <signature> <v_1> ... <v_n>"
-- into lim[base + 1 .. base + n] and returns its time; nil when there is no
-- state, or it was written for other limits or holds another number of
-- values.
local function read_values(raw, sig, lim, base, n)
  if not raw then
    return nil
  end
  local time, signature, values = string.match(raw, '^(%d+) (%d+) (.+)$')
  if time == nil or tonumber(signature) ~= sig then
    return nil
  end
  if n == 1 then
    lim[base + 1] = tonumber(values)
    if lim[base + 1] == nil then
      return nil
    end
    return tonumber(time)
  end
  local words = 0
  for word in string.gmatch(values, '%S+') do
    words = words + 1
    lim[base + words] = tonumber(word)
  end
  if words ~= n then
    return nil
  end
  return tonumber(time)
end

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
