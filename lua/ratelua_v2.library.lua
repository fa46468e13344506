#!lua name=ratelua_v2
-- Generated from lua/src by luagen: every v2 script as a function with
-- the same KEYS/ARGV/reply contract (FCALL <function> 1 <key> <ARGV...>).

redis.register_function('ratelua_ar1_v2', function(KEYS, ARGV)
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
end)

redis.register_function('ratelua_sliding_window_v2', function(KEYS, ARGV)
-- ratelua sliding_window v2: several <max, duration, resolution> limits over
-- time buckets, all in one hash. Same contract, replies and semantics as v1
-- (see sliding_window.v1.lua), at a lower cost; its state is v1's layout but
-- for the signature, which is v2's.
--
-- KEYS[1]  the state key (the only key read or written)
-- ARGV[1]  eventCount: > 0 record that many events and decide; 0 decide
--          whether one more event would pass (records nothing, but may save
--          the dropping of expired buckets); < 0 delete the state and reply
--          as for a fresh key
-- ARGV[2]  unit of now and of every duration: 's', 'ms' or 'us'
-- ARGV[3]  now in that unit, or '' for the server clock (TIME)
-- ARGV[4]  mode: '0' a denied call records nothing in any limit;
--          '1' every call records its events, allowed or not
-- ARGV[5..] 1 to 16 limits of three integers:
--          max         events allowed in the window, 1..10^9
--          duration    the window in the unit, 1..2^52
--          resolution  bucket width in the unit, 1..duration;
--                      ceil(duration / resolution) <= 10000 buckets
-- reply    {allowed, remaining, retry_after, reset_after, limit_index}
--
-- Bucket b holds the events at times t with floor(t / resolution) = b. At
-- time now a limit counts the buckets b > floor((now - duration) /
-- resolution). Events are allowed when count + eventCount <= max for every
-- limit. Fresh means every count is 0; reset_after is the time until then.
--
-- State: a hash. Per limit i, a ring of N = ceil(duration / resolution)
-- buckets ends at the bucket of the last write, w = floor(time /
-- resolution); its non-empty buckets form a chain, oldest first.
-- Field "m" is "<time> <signature>" then "<total> <span> <lag>" per limit:
-- the time of the last write in the unit, a number folded from the unit and
-- the limits (other limits on the same key start fresh), and per limit the
-- events in its ring, w minus the oldest non-empty bucket, and the ring's
-- end minus w ("0 0 0" for an empty ring). Field "<i>.<b mod N>" is
-- "<b>:<count>:<step>" for a non-empty bucket b of limit i, step being the
-- distance to the next non-empty bucket (0 for the newest); a field whose
-- bucket has left the ring is stale and ignored until reused. A bucket's
-- count is capped at max + 1 (mode 1), which changes no reply. TTL:
-- reset_after. A now earlier than the last write is treated as the time of
-- the last write. A call that drops more than 16 expired buckets without
-- recording saves the advanced rings (HSET of "m" alone), so each bucket is
-- read about once.
-- Cost: HGET, HMGET, HSET, PEXPIRE per recorded decision whatever the number
-- of limits and buckets, and one more HMGET for a denied reply in the
-- common case (plus TIME for the server clock); reads grow with the buckets
-- passed since the last call, not with the buckets in the window. A bucket
-- read is parsed only when its count or step is used.

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

-- One flat table t. Limit i owns t[o + 1 .. o + 20], o = 20 * (i - 1):
--   1 max, 2 duration, 3 resolution, 4 N (buckets), 5 floor(duration /
--   resolution), 6 duration mod resolution, 7 ring total, 8 span, 9 lag,
--   10 head (the bucket of the decision's time), 11 low (the newest bucket
--   out of the window), 12 newest non-empty bucket w (false: empty ring),
--   13 oldest non-empty bucket (false: empty ring), 14 first bucket leaving
--   the ring, 15 index of its field in the read, 16 window count, 17 the
--   read value of bucket w, 18 that of the partly covered oldest bucket
--   (false: not read), 19 the format of the limit's field names, '<i>.%d'
--   (nil until needed; string.format is cheaper than concatenating numbers),
--   20 the field name of bucket w.
-- After them (base = 20 * n): the fields read, then the fields written, the
-- meta words and the fields read ahead on a chain. The constructor sizes the
-- array part for one limit at once (growing a table rehashes it).
local t = {
  nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
  nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
  nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
  nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
}
local bad = nil
for i = 5, 4 + 3 * n, 3 do
  local max = int(i, 1, 1000000000)
  if max == nil then
    return limit_error(i, 3, 'max', '[1, 10^9]')
  end
  local duration = int(i + 1, 1, MAX_TIME)
  if duration == nil then
    return limit_error(i + 1, 3, 'duration', '[1, 2^52]')
  end
  local resolution = int(i + 2, 1, MAX_TIME)
  if resolution == nil then
    return limit_error(i + 2, 3, 'resolution', '[1, 2^52]')
  end
  sig = ((sig * 31 + max) % 4294967291 * 31 + duration) % 4294967291
  sig = (sig * 31 + resolution) % 4294967291
  local o = (i - 5) / 3 * 20
  local q = floor_div(duration, resolution)
  local r = duration - q * resolution
  local buckets = q
  if r > 0 then
    buckets = q + 1
  end
  t[o + 1] = max
  t[o + 2] = duration
  t[o + 3] = resolution
  t[o + 4] = buckets
  t[o + 5] = q
  t[o + 6] = r
  if bad == nil and (resolution > duration or buckets > 10000) then
    bad = o
  end
end
if bad ~= nil then
  local i = bad / 20 + 1
  if t[bad + 3] > t[bad + 2] then
    return fail('limit ' .. i .. ': resolution must be at most duration, got '
      .. string.format('%d > %d', t[bad + 3], t[bad + 2]))
  end
  return fail('limit ' .. i .. ': duration / resolution must be at most 10000 buckets, got '
    .. string.format('%d', t[bad + 4]))
end
local key = KEYS[1]
local last_o = 20 * (n - 1)
if count < 0 then
  return reset(t, 20, n)
end
now = now or server_now(unit)

-- The last write: its time, and per limit the ring total, span and lag,
-- if it was written for these limits.
local last = nil
local meta = redis.call('HGET', key, 'm')
if meta then
  local time, signature, total, span, lag, at = string.match(meta, '^(%d+) (%d+) (%d+) (%d+) (%d+)()')
  if time ~= nil and tonumber(signature) == sig then
    t[7], t[8], t[9] = tonumber(total), tonumber(span), tonumber(lag)
    for o = 20, last_o, 20 do
      total, span, lag, at = string.match(meta, '^ (%d+) (%d+) (%d+)()', at)
      if total == nil then
        break
      end
      t[o + 7], t[o + 8], t[o + 9] = tonumber(total), tonumber(span), tonumber(lag)
    end
    if at == #meta + 1 then
      last = tonumber(time)
    end
  end
  if last == nil then
    redis.call('DEL', key) -- written for other limits
  end
end
local stamp = now
if last ~= nil and last > now then
  stamp = last
end

-- Advance every ring to stamp: name the buckets leaving it, the newest
-- written bucket and the partly covered oldest bucket, to read them at once.
local base = 20 * n
local m = 0
local leaving = 0
for o = 0, last_o, 20 do
  local resolution, buckets = t[o + 3], t[o + 4]
  local head = floor_div(stamp, resolution)
  local low = head - t[o + 5]
  if stamp - head * resolution < t[o + 6] then
    low = low - 1
  end
  local written, first = false, false
  if last ~= nil and t[o + 7] > 0 then
    local w = floor_div(last, resolution)
    local ring_end = w + t[o + 9]
    if head - ring_end < buckets then
      written, first = w, w - t[o + 8]
      local name = string.format('%d.%%d', o / 20 + 1)
      t[o + 19] = name
      local lo = ring_end + 1 - buckets
      if lo < first then
        lo = first
      end
      t[o + 14], t[o + 15] = lo, m + 1
      local edge = head - buckets
      if edge >= lo then
        leaving = leaving + edge - lo + 1
        for b = lo, edge do
          m = m + 1
          t[base + m] = string.format(name, b % buckets)
        end
      end
      m = m + 1
      t[base + m] = string.format(name, w % buckets)
      t[o + 20] = t[base + m]
      local partial = edge + 1
      if low == partial and partial < w and partial >= first then
        m = m + 1
        t[base + m] = string.format(name, partial % buckets)
      end
    end
  end
  if not written then
    t[o + 7] = 0
  end
  t[o + 10], t[o + 11], t[o + 12], t[o + 13] = head, low, written, first
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

-- Drop the leaving buckets, walking the chain from its oldest bucket; count
-- each window and decide.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for o = 0, last_o, 20 do
  local total, written, first = t[o + 7], t[o + 12], t[o + 13]
  if written then
    local low, edge, lo, at = t[o + 11], t[o + 10] - t[o + 4], t[o + 14], t[o + 15]
    local ahead = edge - lo + 1
    if ahead < 0 then
      ahead = 0
    end
    local wv, pv = vals[vb + at + ahead] or '', false
    local partial = edge + 1
    if low == partial and partial < written and partial >= first then
      pv = vals[vb + at + ahead + 1] or ''
    end
    t[o + 17], t[o + 18] = wv, pv
    while first and first <= edge do
      local v = vals[vb + at + first - lo]
      local c, s = 0, 0
      if v then
        local b, vc, vs = string.match(v, '^(%d+):(%d+):(%d+)$')
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
    t[o + 7], t[o + 12], t[o + 13] = total, written, first
    if low == partial and first == partial then
      local v = pv
      if partial == written then
        v = wv
      end
      local b, vc = string.match(v, '^(%d+):(%d+):%d+$')
      if b ~= nil and tonumber(b) == partial then
        total = total - tonumber(vc)
      end
    end
  end
  t[o + 16] = total
  if total + asked > t[o + 1] then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')
local save = record or leaving > 16

-- Record, and reply from the state after this call: when allowed, the limit
-- with the fewest remaining decides; when denied, the one with the longest
-- retry (never first); ties go to the lower index.
local k = base -- t[base + 1 .. k]: the fields written
local mb = base + 4 * n -- t[mb + 1 .. mb + 3 * n]: the meta words
local rb = base + 7 * n -- t[rb + 1 ..]: the fields read ahead
local remaining, retry, reset_after, index = nil, 0, 0, 1
for o = 0, last_o, 20 do
  local max, duration, resolution, buckets = t[o + 1], t[o + 2], t[o + 3], t[o + 4]
  local total, head, low, written, first, window = t[o + 7], t[o + 10], t[o + 11], t[o + 12], t[o + 13], t[o + 16]
  local i = o / 20 + 1
  local name = t[o + 19]
  if name == nil and (record or not allowed) then
    name = string.format('%d.%%d', i)
  end
  -- The newest bucket before this call: its count and step once parsed.
  local newest, wc, ws = written, nil, nil
  local updated = 0
  if record then
    local current = 0
    if written then
      wc, ws = 0, 0
      local b, vc, vs = string.match(t[o + 17], '^(%d+):(%d+):(%d+)$')
      if b ~= nil and tonumber(b) == written then
        wc, ws = tonumber(vc), tonumber(vs)
      end
      if written == head then
        current = wc
      else
        -- Link the previous newest bucket to the new one.
        ws = head - written
        t[k + 1], t[k + 2] = t[o + 20], string.format('%d:%d:%d', written, wc, ws)
        k = k + 2
      end
    end
    updated = current + count
    if updated > max + 1 then
      updated = max + 1
    end
    total = total + updated - current
    window = window + updated - current
    written = head
    if not first then
      first = head
    end
    t[k + 1], t[k + 2] = string.format(name, head % buckets), string.format('%d:%d:0', head, updated)
    k = k + 2
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
    local b = first
    local from, to, read, digits = 0, -1, nil, nil
    while true do
      local c, s = 0, 0
      local v = false
      if record and b == head then
        c = updated
      elseif b == newest then
        if wc == nil then
          wc, ws = 0, 0
          local sb, vc, vs = string.match(t[o + 17], '^(%d+):(%d+):(%d+)$')
          if sb ~= nil and tonumber(sb) == newest then
            wc, ws = tonumber(vc), tonumber(vs)
          end
        end
        c, s = wc, ws
      else
        if b == partial and t[o + 18] then
          v = t[o + 18]
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
                  stem = string.format(name, (slot - d) / 10)
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
          local sb, vc
          sb, vc, s = string.match(v, '^(%d+):(%d+):(%d+)$')
          if sb ~= nil and tonumber(sb) == b then
            c = tonumber(vc)
          else
            s = 0
          end
        end
      end
      if b > low then
        excess = excess - c
        if excess <= 0 then
          break
        end
      end
      s = tonumber(s)
      if s == 0 then
        -- Unreachable while the ring totals agree with the chain.
        error('ratelua: sliding_window state of ' .. key .. ' is inconsistent')
      end
      b = b + s
    end
    r = cap(b * resolution + duration - now)
  end
  if window > 0 then
    local reset = cap(written * resolution + duration - now)
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
      t[a - 2], t[a - 1], t[a] = total, written - first, head - written
    else
      t[a - 2], t[a - 1], t[a] = 0, 0, 0
    end
  end
end

-- Write what was recorded, or, when this call had to read many buckets
-- leaving the rings, the advanced rings alone so that the next calls need
-- not read them again (the key keeps its TTL).
if save then
  local format = '%d %d %d %d %d'
  if n > 1 then
    format = '%d %d' .. string.rep(' %d %d %d', n)
  end
  local time = last
  if record then
    time = stamp
  end
  redis.call('HSET', key, 'm', string.format(format, time, sig, unpack(t, mb + 1, mb + 3 * n)), unpack(t, base + 1, k))
  if record then
    redis.call('PEXPIRE', key, string.format('%d', ttl_ms(unit, reset_after)))
  end
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
end)

redis.register_function('ratelua_token_bucket_v2', function(KEYS, ARGV)
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
end)

redis.register_function('ratelua_zset_log_v2', function(KEYS, ARGV)
-- ratelua zset_log v2: an exact sliding log of event times in one sorted
-- set, checked against one or more <max, window> limits. Same contract,
-- replies, state and semantics as v1 (see zset_log.v1.lua), at a lower cost;
-- its state is v1's, member for member.
--
-- KEYS[1]  the state key (the only key read or written)
-- ARGV[1]  eventCount: > 0 record that many events and decide; 0 decide
--          whether one more event would pass (writes nothing); < 0 delete
--          the state and reply as for a fresh key
-- ARGV[2]  unit of now and of every duration: 's', 'ms' or 'us'
-- ARGV[3]  now in that unit, or '' for the server clock (TIME)
-- ARGV[4]  mode: '0' a denied call records nothing;
--          '1' every call records its events, allowed or not
-- ARGV[5..] 1 to 16 limits of two integers:
--          max     events allowed in any window, 1..10^6
--          window  in the unit, 1..2^52
-- reply    {allowed, remaining, retry_after, reset_after, limit_index}
--
-- At time now a limit counts the events at times t > now - window. Events
-- are allowed when count + eventCount <= max for every limit, so no window
-- of any limit ever holds more than max admitted events. Fresh means no
-- event is in any window; reset_after is the time until then.
--
-- State: a sorted set, one member per event, scored by its time in the
-- unit, named "<time>:<seq>:<size>" where seq numbers the events of one time
-- (a length letter then digits, so names sort in event order) and size is
-- the set's cardinality once that event was added; the newest member tells
-- the last write's time and the set's size. Only the newest max+1 events
-- (largest max) inside the largest window can change a reply; older ones
-- are dropped by rank once they are at least half of the set. TTL:
-- reset_after. A now earlier than the newest event is treated as the time
-- of the newest event. The unit must not change for a key.
-- Cost: ZRANGE (newest), one ZCOUNT per limit, ZADD, PEXPIRE per recorded
-- decision, an occasional ZREMRANGEBYRANK, a ZRANGE per denied reply (plus
-- TIME for the server clock). v2 makes no ZCOUNT for a window the newest
-- event is not in (it holds none) or when the set holds one event, and no
-- ZRANGE for a denied reply whose event is the newest or already read.

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

local format = string.format
local count, unit, now, mode, n = header(2)
if count == nil then
  return unit
end
-- lim[2i-1], lim[2i]: max and window of limit i; lim[2n+i]: the events in
-- its window. largest: the largest max; wide: the widest window's index
-- (the first of them).
local lim = {}
local largest, wide = 0, 1
for i = 5, 3 + 2 * n, 2 do
  local max = int(i, 1, 1000000)
  if max == nil then
    return limit_error(i, 2, 'max', '[1, 10^6]')
  end
  local window = int(i + 1, 1, MAX_TIME)
  if window == nil then
    return limit_error(i + 1, 2, 'window', '[1, 2^52]')
  end
  lim[i - 4], lim[i - 3] = max, window
  if max > largest then
    largest = max
  end
  if window > lim[2 * wide] then
    wide = (i - 3) / 2
  end
end
local key = KEYS[1]
if count < 0 then
  return reset(lim, 2, n)
end
now = now or server_now(unit)

-- The newest event: the last write's time, its sequence and the set size
-- (a set written by this script holds exactly `size` members).
local last, seq, size = nil, 0, 0
local newest = redis.call('ZRANGE', key, '-1', '-1')[1]
if newest then
  local time, s, z = string.match(newest, '^(%d+):%l(%d+):(%d+)$')
  if time == nil then
    return fail('KEYS[1] holds a member that is not a zset_log event: ' .. got(newest))
  end
  last, seq, size = tonumber(time), tonumber(s), tonumber(z)
end
local stamp = now
if last ~= nil and last > now then
  stamp = last
end

-- Count each window and decide. A window the newest event is not in holds
-- none; a set of one event holds it in every window the newest is in.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for i = 1, n do
  local c = 0
  if size > 0 and last > stamp - lim[2 * i] then
    if size == 1 then
      c = 1
    else
      c = redis.call('ZCOUNT', key, format('(%d', stamp - lim[2 * i]), '+inf')
    end
  end
  lim[2 * n + i] = c
  if c + asked > lim[2 * i - 1] then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')
local added = 0
local top = last -- the newest event's time after this call
if record then
  added = count
  if added > largest + 1 then
    added = largest + 1
  end
  local keep = largest + 1 - added
  if lim[2 * n + wide] < keep then
    keep = lim[2 * n + wide]
  end
  local removable = size - keep
  if removable > 0 and removable >= keep then
    redis.call('ZREMRANGEBYRANK', key, '0', format('%d', removable - 1))
    size = keep
  end
  if last ~= stamp then
    seq = 0
  end
  -- Members are "<time>:<letter><seq>:<size>". Numbers are formatted with
  -- string.format('%d'): exact, and cheaper than '..' or a number argument.
  local score = format('%d', stamp)
  if added == 1 then
    local k = seq + 1
    if k < 10 then
      redis.call('ZADD', key, score, format('%s:a%d:%d', score, k, size + 1))
    else
      local len, ten = 2, 100
      while k >= ten do
        len, ten = len + 1, ten * 10
      end
      redis.call('ZADD', key, score, format('%s:%s%d:%d', score, string.char(96 + len), k, size + 1))
    end
  else
    local batch = {}
    local len, ten = 1, 10
    for first = 1, added, 1000 do
      local b = 0
      for j = first, math.min(first + 999, added) do
        local k = seq + j
        while k >= ten do
          len, ten = len + 1, ten * 10
        end
        batch[b + 1] = score
        batch[b + 2] = format('%s:%s%d:%d', score, string.char(96 + len), k, size + j)
        b = b + 2
      end
      redis.call('ZADD', key, unpack(batch, 1, b))
    end
  end
  size = size + added
  top = stamp
  for i = 2 * n + 1, 3 * n do
    lim[i] = lim[i] + added
  end
end

-- Reply from the state after this call: when allowed, the limit with the
-- fewest remaining decides; when denied, the one with the longest retry
-- (never first); ties go to the lower index.
local remaining, retry, reset_after, index = nil, 0, 0, 1
local fetched, fetched_time = -1, nil -- the last event read by rank, and its time
for i = 1, n do
  local max, window, c = lim[2 * i - 1], lim[2 * i], lim[2 * n + i]
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
    local reset = cap(top + window - now)
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
      local time = stamp
      if rank == fetched then
        time = fetched_time
      elseif rank > added then
        local r = format('%d', rank)
        local member = redis.call('ZRANGE', key, r, r, 'REV')
        time = tonumber(string.match(member[1], '^(%d+):'))
        fetched, fetched_time = rank, time
      elseif rank == added then
        time = last
      end
      local wait = cap(time + window - now)
      if wait > retry then
        retry, index = wait, i
      end
    end
  end
end
if record then
  redis.call('PEXPIRE', key, format('%d', ttl_ms(unit, reset_after)))
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
end)
