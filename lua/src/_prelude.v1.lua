-- ratelua v1 prelude: argument parsing and exact integer helpers shared by
-- every v1 script (generated into each released file; do not edit there).
local MAX_TIME = 4503599627370496 -- 2^52: bound of now, durations and replies
local MAX_LIMITS = 16
local MS_PER_UNIT = { s = 1000, ms = 1, us = 0.001 }

local function fail(msg)
  return redis.error_reply('ERR ratelua: ' .. msg)
end

local function quote(value)
  if type(value) ~= 'string' then
    return 'nothing'
  end
  if #value > 40 then
    value = string.sub(value, 1, 40) .. '...'
  end
  return "'" .. value .. "'"
end

-- int_arg parses a decimal integer string within [lo, hi], or returns nil.
local function int_arg(value, lo, hi)
  if type(value) ~= 'string' or #value == 0 or #value > 20
      or not string.find(value, '^%-?%d+$') then
    return nil
  end
  local n = tonumber(value)
  if n == nil or n < lo or n > hi then
    return nil
  end
  return n
end

-- Exact integer division for non-negative a and positive b (both < 2^53).
local function floor_div(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

local function ceil_div(a, b)
  local q = floor_div(a, b)
  if q * b < a then
    q = q + 1
  end
  return q
end

-- floor(a / b) for any integer a and positive b.
local function floor_div_signed(a, b)
  if a >= 0 then
    return floor_div(a, b)
  end
  return -ceil_div(-a, b)
end

local function int_str(n)
  return string.format('%d', n)
end

-- parse_call validates KEYS and ARGV against the v1 contract. fields lists
-- each limit's integers as {name, lo, hi, 'text of the range'}. It returns
-- a call table, or nil and an error reply.
local function parse_call(fields)
  if #KEYS ~= 1 then
    return nil, fail('expected exactly 1 key (the state key), got ' .. #KEYS)
  end
  local count = int_arg(ARGV[1], -MAX_TIME, MAX_TIME)
  if count == nil then
    return nil, fail('ARGV[1] eventCount must be an integer in [-2^52, 2^52], got ' .. quote(ARGV[1]))
  end
  local unit = ARGV[2]
  local ms_per_unit = MS_PER_UNIT[unit]
  if type(unit) ~= 'string' or ms_per_unit == nil then
    return nil, fail("ARGV[2] unit must be 's', 'ms' or 'us', got " .. quote(unit))
  end
  local now = nil
  if ARGV[3] ~= '' then
    now = int_arg(ARGV[3], 0, MAX_TIME)
    if now == nil then
      return nil, fail('ARGV[3] now must be empty (server clock) or an integer in [0, 2^52], got ' .. quote(ARGV[3]))
    end
  end
  local mode = ARGV[4]
  if mode ~= '0' and mode ~= '1' then
    return nil, fail("ARGV[4] mode must be '0' (count allowed events) or '1' (count every attempt), got " .. quote(mode))
  end
  local group = #fields
  local nargs = #ARGV - 4
  if nargs < group or nargs % group ~= 0 or nargs / group > MAX_LIMITS then
    return nil, fail('expected 1 to ' .. MAX_LIMITS .. ' limits of ' .. group .. ' integers after ARGV[4], got '
      .. math.max(nargs, 0) .. ' arguments')
  end
  local limits = {}
  local signature = { unit }
  for i = 1, nargs / group do
    local limit = {}
    for j = 1, group do
      local field = fields[j]
      local index = 4 + (i - 1) * group + j
      local value = int_arg(ARGV[index], field[2], field[3])
      if value == nil then
        return nil, fail('ARGV[' .. index .. '] (limit ' .. i .. ' ' .. field[1] .. ') must be an integer in '
          .. field[4] .. ', got ' .. quote(ARGV[index]))
      end
      limit[field[1]] = value
      signature[#signature + 1] = int_str(value)
    end
    limits[i] = limit
  end
  return {
    key = KEYS[1],
    count = count,
    unit = unit,
    ms_per_unit = ms_per_unit,
    now = now,
    mode = mode,
    limits = limits,
    signature = string.sub(redis.sha1hex(table.concat(signature, ' ')), 1, 8),
  }
end

-- clock returns the call's time: the caller's now, or the server's TIME in
-- the call's unit.
local function clock(call)
  if call.now ~= nil then
    return call.now
  end
  local time = redis.call('TIME')
  local seconds = tonumber(time[1])
  local micros = tonumber(time[2])
  if call.unit == 's' then
    return seconds
  elseif call.unit == 'ms' then
    return seconds * 1000 + math.floor(micros / 1000)
  end
  return seconds * 1000000 + micros
end

-- read_state parses a state string "<time> <signature> <value>..." that
-- was written for this call's unit and limits with `size` values. It
-- returns the time and the values as numbers, or nil when there is no state
-- or it was written for other limits.
local function read_state(call, raw, size)
  if not raw then
    return nil
  end
  local words = {}
  for word in string.gmatch(raw, '%S+') do
    words[#words + 1] = word
  end
  if #words ~= size + 2 or words[2] ~= call.signature then
    return nil
  end
  local values = {}
  for i = 1, size do
    values[i] = tonumber(words[i + 2])
  end
  return tonumber(words[1]), values
end

-- state_string formats a state for read_state from values already
-- formatted as strings.
local function state_string(call, time, values)
  return int_str(time) .. ' ' .. call.signature .. ' ' .. table.concat(values, ' ')
end

-- effective returns the time a call is decided at: now, or the last
-- write's time when the caller's clock is behind it.
local function effective(now, last)
  if last ~= nil and last > now then
    return last
  end
  return now
end

-- ttl_ms converts a positive duration in the call's unit to whole
-- milliseconds, rounded up and capped at 2^52.
local function ttl_ms(call, duration)
  local ms
  if call.unit == 'us' then
    ms = ceil_div(duration, 1000)
  elseif call.unit == 's' then
    ms = duration * 1000
  else
    ms = duration
  end
  if ms > MAX_TIME then
    ms = MAX_TIME
  end
  if ms < 1 then
    ms = 1
  end
  return ms
end

-- cap bounds a reported duration to [0, 2^52].
local function cap(duration)
  if duration > MAX_TIME then
    return MAX_TIME
  end
  if duration < 0 then
    return 0
  end
  return duration
end

-- fresh_reply answers for a key with no state: every limit admits, nothing
-- decided it (limit_index 0).
local function fresh_reply(call, field)
  local remaining = nil
  for i = 1, #call.limits do
    local size = call.limits[i][field]
    if remaining == nil or size < remaining then
      remaining = size
    end
  end
  return { 1, remaining, 0, 0, 0 }
end

-- decide builds the five-integer reply from the decision and each limit's
-- outcome {remaining, retry, reset} in the state after the call (retry is
-- -1 for never). When allowed, the deciding limit is the one with the fewest
-- remaining; when denied, the one with the longest retry (never first);
-- ties go to the lower index.
local function decide(allowed, outcomes)
  local remaining, retry, reset, index = nil, 0, 0, 1
  for i = 1, #outcomes do
    local o = outcomes[i]
    if remaining == nil or o[1] < remaining then
      remaining = o[1]
      if allowed then
        index = i
      end
    end
    if o[3] > reset then
      reset = o[3]
    end
    if not allowed and retry ~= -1 and (o[2] == -1 or o[2] > retry) then
      retry, index = o[2], i
    end
  end
  if allowed then
    return { 1, remaining, 0, reset, index }
  end
  return { 0, remaining, retry, reset, index }
end
