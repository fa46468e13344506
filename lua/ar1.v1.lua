-- ratelua ar1 v1: exponentially decaying counts (AR(1)), several limits in
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
-- Each limit keeps a count c. At every boundary of its resolution (t
-- crossing a multiple of resolution) c is divided by decay/1000; a count
-- below 1/1000 of an event becomes 0. Events are allowed when
-- c + eventCount <= max for every limit. Powers are computed by repeated
-- squaring and every boundary is found by an exact check of that same
-- arithmetic, never by logarithms. Fresh means every count is 0;
-- reset_after is the time until then. remaining is floor(max - c).
--
-- State: a string "<time> <signature> <c_1> ... <c_n>" (counts as %.17g,
-- time of the last write in the unit, signature the first 8 hex digits of
-- the SHA1 of the unit and limits: other limits on the same key start
-- fresh). TTL: reset_after. A now earlier than the last write is treated as
-- the time of the last write.
-- Cost: GET and SET (plus TIME for the server clock).

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

local EPSILON = 0.001

-- power returns base^k by repeated squaring (k >= 0 an integer).
local function power(base, k)
  local result = 1
  while k > 0 do
    if k % 2 == 1 then
      result = result * base
    end
    base = base * base
    k = math.floor(k / 2)
  end
  return result
end

-- decayed returns count after k resolution boundaries.
local function decayed(count, factor, k)
  if k > 0 then
    count = count / power(factor, k)
  end
  if count < EPSILON then
    return 0
  end
  return count
end

-- boundaries returns the fewest k >= 1 for which done(k) holds; done must
-- be monotone and hold for some k <= 2^52.
local function boundaries(done)
  local high = 1
  while not done(high) do
    high = high * 2
  end
  local low = math.floor(high / 2) -- done(low) is false, or low is 0
  while high - low > 1 do
    local middle = math.floor((low + high) / 2)
    if done(middle) then
      high = middle
    else
      low = middle
    end
  end
  return high
end

local function main()
  local call, err = parse_call({
    { 'max', 1, 1000000000, '[1, 10^9]' },
    { 'decay', 1001, 1000000000, '[1001, 10^9]' },
    { 'resolution', 1, MAX_TIME, '[1, 2^52]' },
  })
  if call == nil then
    return err
  end
  local limits = call.limits
  for i = 1, #limits do
    limits[i].factor = limits[i].decay / 1000
  end
  if call.count < 0 then
    redis.call('DEL', call.key)
    return fresh_reply(call, 'max')
  end
  local now = clock(call)

  -- Read the counts, decayed to the effective time.
  local last, stored = read_state(call, redis.call('GET', call.key), #limits)
  local stamp = effective(now, last)
  local counts = {}
  for i = 1, #limits do
    local limit = limits[i]
    counts[i] = 0
    if last ~= nil then
      local k = math.floor(stamp / limit.resolution) - math.floor(last / limit.resolution)
      counts[i] = decayed(stored[i], limit.factor, k)
    end
  end

  -- Decide.
  local count = call.count
  local asked = math.max(count, 1)
  local allowed = true
  for i = 1, #limits do
    if counts[i] + asked > limits[i].max then
      allowed = false
    end
  end
  local record = count > 0 and (allowed or call.mode == '1')
  if record then
    for i = 1, #limits do
      counts[i] = counts[i] + count
    end
  end

  -- Reply from the state after this call.
  local outcomes = {}
  local reset_after = 0
  for i = 1, #limits do
    local limit = limits[i]
    local c = counts[i]
    local slot_start = math.floor(stamp / limit.resolution) * limit.resolution
    local remaining = math.max(0, math.floor(limit.max - c))
    local retry = 0
    if asked > limit.max then
      retry = -1
    elseif c + asked > limit.max then
      local k = boundaries(function(k)
        return decayed(c, limit.factor, k) + asked <= limit.max
      end)
      retry = cap(slot_start + k * limit.resolution - now)
    end
    local reset = 0
    if c > 0 then
      local k = boundaries(function(k)
        return decayed(c, limit.factor, k) == 0
      end)
      reset = cap(slot_start + k * limit.resolution - now)
    end
    if reset > reset_after then
      reset_after = reset
    end
    outcomes[i] = { remaining, retry, reset }
  end
  if record then
    local values = {}
    for i = 1, #limits do
      values[i] = string.format('%.17g', counts[i])
    end
    redis.call('SET', call.key, state_string(call, stamp, values), 'PX', ttl_ms(call, reset_after))
  end
  return decide(allowed, outcomes)
end

return main()
