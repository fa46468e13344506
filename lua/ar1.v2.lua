-- ratelua ar1 v2: exponentially decaying counts (AR(1)), several limits in
-- one key. Same contract, replies and semantics as v1 (see ar1.v1.lua), at
-- a lower cost; its state is not v1's (the signature is v2's).
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
-- Each limit keeps a count c. At every boundary of its resolution (t
-- crossing a multiple of resolution) c is divided by decay/1000; a count
-- below 1/1000 of an event becomes 0. Events are allowed when
-- c + eventCount <= max for every limit. Powers are computed by repeated
-- squaring; a boundary is estimated with a logarithm and then decided by an
-- exact check of that same arithmetic. Fresh means every count is 0;
-- reset_after is the time until then. remaining is floor(max - c).
--
-- State: a string "<time> <signature> <c_1> ... <c_n>" (counts as %.17g,
-- time of the last write in the unit, signature a number folded from the
-- unit and limits: other limits on the same key start fresh). TTL:
-- reset_after. A now earlier than the last write is treated as the time of
-- the last write.
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
    k = floor(k / 2)
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

local count, unit, now, mode, n, sig = header(3)
if count == nil then
  return unit
end
-- lim[3i-2], lim[3i-1], lim[3i]: max, decay, resolution of limit i;
-- lim[3n+i]: its count.
local lim = { 0, 0, 0, 0 } -- sized for one limit: growing a table costs
for i = 5, 4 + 3 * n, 3 do
  local max = int(i, 1, 1000000000)
  if max == nil then
    return limit_error(i, 3, 'max', '[1, 10^9]')
  end
  local decay = int(i + 1, 1001, 1000000000)
  if decay == nil then
    return limit_error(i + 1, 3, 'decay', '[1001, 10^9]')
  end
  local resolution = int(i + 2, 1, MAX_TIME)
  if resolution == nil then
    return limit_error(i + 2, 3, 'resolution', '[1, 2^52]')
  end
  lim[i - 4], lim[i - 3], lim[i - 2] = max, decay, resolution
  sig = ((sig * 31 + max) % 4294967291 * 31 + decay) % 4294967291
  sig = (sig * 31 + resolution) % 4294967291
end
local key = KEYS[1]
if count < 0 then
  return reset(lim, 3, n)
end
now = now or server_now(unit)

-- Read the counts: the state counts only if it was written for these
-- limits.
local last = read_values(redis.call('GET', key), sig, lim, 3 * n, n)
local stamp = now
if last ~= nil and last > now then
  stamp = last
end

-- The counts decayed to stamp, and the decision.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for i = 1, n do
  local c = 0
  if last ~= nil then
    local resolution = lim[3 * i]
    c = decayed(lim[3 * n + i], lim[3 * i - 1] / 1000, floor(stamp / resolution) - floor(last / resolution))
  end
  lim[3 * n + i] = c
  if c + asked > lim[3 * i - 2] then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')

-- Add the events and reply from the state after this call: when allowed,
-- the limit with the fewest remaining decides; when denied, the one with
-- the longest retry (never first); ties go to the lower index.
local remaining, retry, reset_after, index = nil, 0, 0, 1
for i = 1, n do
  local max, factor, resolution = lim[3 * i - 2], lim[3 * i - 1] / 1000, lim[3 * i]
  local c = lim[3 * n + i]
  if record then
    c = c + count
    lim[3 * n + i] = c
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
    local reset = cap(slot_start + boundaries(c, factor, 0, 0) * resolution - now)
    if reset > reset_after then
      reset_after = reset
    end
  end
  if not allowed and retry ~= -1 then
    if asked > max then
      retry, index = -1, i
    elseif c + asked > max then
      local wait = cap(slot_start + boundaries(c, factor, asked, max) * resolution - now)
      if wait > retry then
        retry, index = wait, i
      end
    end
  end
end
if record then
  local state = string.format('%d %d' .. string.rep(' %.17g', n), stamp, sig, unpack(lim, 3 * n + 1, 4 * n))
  redis.call('SET', key, state, 'PX', string.format('%d', ttl_ms(unit, reset_after)))
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
