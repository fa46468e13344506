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
