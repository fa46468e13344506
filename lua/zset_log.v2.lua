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
