#!lua name=ratelua_v1
-- Generated from lua/src by luagen: every v1 script as a function with
-- the same KEYS/ARGV/reply contract (FCALL <function> 1 <key> <ARGV...>).

redis.register_function('ratelua_ar1_v1', function(KEYS, ARGV)
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
end)

redis.register_function('ratelua_sliding_window_v1', function(KEYS, ARGV)
-- ratelua sliding_window v1: several <max, duration, resolution> limits over
-- time buckets, all in one hash.
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
-- the time of the last write in the unit, the first 8 hex digits of the
-- SHA1 of the unit and limits (other limits on the same key start fresh),
-- and per limit the events in its ring, w minus the oldest non-empty
-- bucket, and the ring's end minus w ("0 0 0" for an empty ring). Field "<i>.<b mod N>" is "<b>:<count>:<step>" for a
-- non-empty bucket b of limit i, step being the distance to the next
-- non-empty bucket (0 for the newest); a field whose bucket has left the
-- ring is stale and ignored until reused. A bucket's count is capped at
-- max + 1 (mode 1), which changes no reply. TTL: reset_after. A now earlier
-- than the last write is treated as the time of the last write.
-- Per limit the meta also keeps how far the ring has been advanced past w:
-- a call that drops more than 16 expired buckets without recording saves
-- the advanced rings (HSET of "m" alone), so each bucket is read about once.
-- Cost: HGET, HMGET, HSET, PEXPIRE per recorded decision whatever the number
-- of limits and buckets, and one more HMGET for a denied reply in the
-- common case (plus TIME for the server clock); reads grow with the buckets
-- passed since the last call, not with the buckets in the window.

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

local function slot_field(i, limit, bucket)
  return i .. '.' .. int_str(bucket % limit.buckets)
end

-- hmget reads fields in batches small enough for unpack.
local function hmget(key, names)
  local values = {}
  for first = 1, #names, 1000 do
    local batch = {}
    for j = first, math.min(first + 999, #names) do
      batch[#batch + 1] = names[j]
    end
    local read = redis.call('HMGET', key, unpack(batch))
    for j = 1, #batch do
      values[first + j - 1] = read[j]
    end
  end
  return values
end

local function main()
  local call, err = parse_call({
    { 'max', 1, 1000000000, '[1, 10^9]' },
    { 'duration', 1, MAX_TIME, '[1, 2^52]' },
    { 'resolution', 1, MAX_TIME, '[1, 2^52]' },
  })
  if call == nil then
    return err
  end
  local limits = call.limits
  for i = 1, #limits do
    local limit = limits[i]
    if limit.resolution > limit.duration then
      return fail('limit ' .. i .. ': resolution must be at most duration, got '
        .. int_str(limit.resolution) .. ' > ' .. int_str(limit.duration))
    end
    limit.buckets = ceil_div(limit.duration, limit.resolution)
    if limit.buckets > 10000 then
      return fail('limit ' .. i .. ': duration / resolution must be at most 10000 buckets, got '
        .. int_str(limit.buckets))
    end
  end
  if call.count < 0 then
    redis.call('DEL', call.key)
    return fresh_reply(call, 'max')
  end
  local now = clock(call)
  local key = call.key

  -- The last write: its time, and per limit the ring total, chain start and
  -- ring end.
  local meta = redis.call('HGET', key, 'm')
  local last, stored = read_state(call, meta, 3 * #limits)
  if meta and last == nil then
    redis.call('DEL', key) -- written for other limits
  end
  for i = 1, #limits do
    if last ~= nil then
      limits[i].total, limits[i].span, limits[i].lag = stored[3 * i - 2], stored[3 * i - 1], stored[3 * i]
    end
  end
  local stamp = effective(now, last)

  -- counts[-1 - b] and steps[-1 - b] hold what is known of bucket b. The
  -- keys are negative so that these sparse tables stay hashed in every Lua
  -- (gopher-lua, used by the tests, would fill an array up to a positive
  -- index).
  local names, wanted = {}, {}
  local function want(i, bucket)
    names[#names + 1] = slot_field(i, limits[i], bucket)
    wanted[#wanted + 1] = { i, bucket }
  end
  local function remember(i, bucket, value)
    local limit = limits[i]
    local count, step = 0, 0
    if value then
      local stored, n, s = string.match(value, '^(%d+):(%d+):(%d+)$')
      if stored ~= nil and tonumber(stored) == bucket then
        count, step = tonumber(n), tonumber(s)
      end
    end
    limit.counts[-1 - bucket] = count
    limit.steps[-1 - bucket] = step
  end

  -- Advance every ring to the effective time: read the buckets leaving it,
  -- the newest written bucket and the partly covered oldest bucket.
  local leaving = 0
  for i = 1, #limits do
    local limit = limits[i]
    limit.head = floor_div(stamp, limit.resolution)
    limit.low = floor_div_signed(stamp - limit.duration, limit.resolution)
    limit.counts, limit.steps = {}, {}
    limit.written, limit.first = nil, nil
    if last ~= nil and limit.total > 0 then
      local written = floor_div(last, limit.resolution)
      local ring_end = written + limit.lag
      if limit.head - ring_end < limit.buckets then
        limit.written = written
        limit.first = written - limit.span
        for bucket = math.max(ring_end + 1 - limit.buckets, limit.first), limit.head - limit.buckets do
          want(i, bucket)
          leaving = leaving + 1
        end
        want(i, written)
        local partial = limit.head - limit.buckets + 1
        if limit.low == partial and partial < written and partial >= limit.first then
          want(i, partial)
        end
      end
    end
    if limit.written == nil then
      limit.total = 0
    end
  end
  local values = hmget(key, names)
  for j = 1, #wanted do
    remember(wanted[j][1], wanted[j][2], values[j])
  end

  -- Drop the leaving buckets, walking the chain from its oldest bucket.
  for i = 1, #limits do
    local limit = limits[i]
    local edge = limit.head - limit.buckets
    while limit.first ~= nil and limit.first <= edge do
      local offset = -1 - limit.first
      limit.total = limit.total - limit.counts[offset]
      if limit.steps[offset] == 0 then
        limit.first, limit.written = nil, nil
      else
        limit.first = limit.first + limit.steps[offset]
      end
    end
  end

  -- Count each window and decide.
  local count = call.count
  local asked = math.max(count, 1)
  local allowed = true
  for i = 1, #limits do
    local limit = limits[i]
    limit.window = limit.total
    local partial = limit.head - limit.buckets + 1
    if limit.low == partial and limit.first == partial then
      limit.window = limit.window - limit.counts[-1 - partial]
    end
    if limit.window + asked > limit.max then
      allowed = false
    end
  end
  local record = count > 0 and (allowed or call.mode == '1')
  local writes = {}
  if record then
    for i = 1, #limits do
      local limit = limits[i]
      local offset = -1 - limit.head
      local current = 0
      if limit.written == limit.head then
        current = limit.counts[offset]
      elseif limit.written ~= nil then
        -- Link the previous newest bucket to the new one.
        local previous = -1 - limit.written
        limit.steps[previous] = limit.head - limit.written
        writes[#writes + 1] = slot_field(i, limit, limit.written)
        writes[#writes + 1] = int_str(limit.written) .. ':' .. int_str(limit.counts[previous]) .. ':'
          .. int_str(limit.steps[previous])
      end
      local updated = math.min(current + count, limit.max + 1)
      limit.counts[offset], limit.steps[offset] = updated, 0
      limit.total = limit.total + updated - current
      limit.window = limit.window + updated - current
      limit.written, limit.lag = limit.head, 0
      if limit.first == nil then
        limit.first = limit.head
      end
      writes[#writes + 1] = slot_field(i, limit, limit.head)
      writes[#writes + 1] = int_str(limit.head) .. ':' .. int_str(updated) .. ':0'
    end
  end

  -- retry_at returns the time at which enough of the oldest events of limit
  -- i have left its window for `asked` events to fit. It walks the chain,
  -- reading a few buckets ahead at a time.
  local function retry_at(i)
    local limit = limits[i]
    local excess = limit.window + asked - limit.max
    local bucket = limit.first
    while bucket ~= nil do
      local offset = -1 - bucket
      if limit.counts[offset] == nil then
        local ahead = {}
        for b = bucket, math.min(bucket + 15, limit.written) do
          if limit.counts[-1 - b] == nil then
            ahead[#ahead + 1] = b
          end
        end
        local fields = {}
        for j = 1, #ahead do
          fields[j] = slot_field(i, limit, ahead[j])
        end
        local read = hmget(key, fields)
        for j = 1, #ahead do
          remember(i, ahead[j], read[j])
        end
      end
      if bucket > limit.low then
        excess = excess - limit.counts[offset]
        if excess <= 0 then
          return bucket * limit.resolution + limit.duration
        end
      end
      if limit.steps[offset] == 0 then
        break
      end
      bucket = bucket + limit.steps[offset]
    end
    -- Unreachable while the ring totals agree with the chain.
    error('ratelua: sliding_window state of ' .. key .. ' is inconsistent')
  end

  -- Reply from the state after this call.
  local outcomes = {}
  local reset_after = 0
  for i = 1, #limits do
    local limit = limits[i]
    local retry = 0
    if asked > limit.max then
      retry = -1
    elseif not allowed and limit.window + asked > limit.max then
      retry = cap(retry_at(i) - now)
    end
    local reset = 0
    if limit.window > 0 then
      reset = cap(limit.written * limit.resolution + limit.duration - now)
    end
    if reset > reset_after then
      reset_after = reset
    end
    outcomes[i] = { math.max(0, limit.max - limit.window), retry, reset }
  end
  -- Write what was recorded, or, when this call had to read many buckets
  -- leaving the rings, the advanced rings alone so that the next calls need
  -- not read them again (the key keeps its TTL).
  if record or leaving > 16 then
    local values = {}
    for i = 1, #limits do
      local limit = limits[i]
      if limit.first == nil then
        values[i] = '0 0 0'
      else
        values[i] = int_str(limit.total) .. ' ' .. int_str(limit.written - limit.first)
          .. ' ' .. int_str(limit.head - limit.written)
      end
    end
    redis.call('HSET', key, 'm', state_string(call, record and stamp or last, values), unpack(writes))
    if record then
      redis.call('PEXPIRE', key, ttl_ms(call, reset_after))
    end
  end
  return decide(allowed, outcomes)
end

return main()
end)

redis.register_function('ratelua_token_bucket_v1', function(KEYS, ARGV)
-- ratelua token_bucket v1: one or more token buckets in one key.
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
-- is the last write in the unit, signature the first 8 hex digits of the
-- SHA1 of the unit and limits (other limits on the same key start fresh),
-- and tokens_i = tokens * refill_interval. TTL: reset_after, so the key
-- vanishes when every bucket is full. A now earlier than the last write is
-- treated as the time of the last write (a clock behind never refills).
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

local function main()
  local call, err = parse_call({
    { 'capacity', 1, 1000000000, '[1, 10^9]' },
    { 'refill_amount', 1, 1000000000, '[1, 10^9]' },
    { 'refill_interval', 1, MAX_TIME, '[1, 2^52]' },
  })
  if call == nil then
    return err
  end
  local limits = call.limits
  for i = 1, #limits do
    local limit = limits[i]
    if limit.capacity * limit.refill_interval > 1125899906842624 then
      return fail('limit ' .. i .. ': capacity * refill_interval must be at most 2^50, got '
        .. int_str(limit.capacity) .. ' * ' .. int_str(limit.refill_interval))
    end
    limit.full = limit.capacity * limit.refill_interval
  end
  if call.count < 0 then
    redis.call('DEL', call.key)
    return fresh_reply(call, 'capacity')
  end
  local now = clock(call)

  -- Read the buckets at the effective time.
  local last, stored = read_state(call, redis.call('GET', call.key), #limits)
  local stamp = effective(now, last)
  local tokens = {}
  for i = 1, #limits do
    local limit = limits[i]
    local level = limit.full
    if last ~= nil then
      level = math.min(stored[i], limit.full)
      if stamp - last >= ceil_div(limit.full - level, limit.refill_amount) then
        level = limit.full
      else
        level = level + (stamp - last) * limit.refill_amount
      end
    end
    tokens[i] = level
  end

  -- Decide.
  local count = call.count
  local asked = math.max(count, 1)
  local allowed = true
  for i = 1, #limits do
    local limit = limits[i]
    if asked > limit.capacity or tokens[i] < asked * limit.refill_interval then
      allowed = false
    end
  end
  local record = count > 0 and (allowed or call.mode == '1')
  if record then
    for i = 1, #limits do
      local limit = limits[i]
      -- Taking more than 2 * capacity always ends at the floor.
      local taken = math.min(count, 2 * limit.capacity) * limit.refill_interval
      tokens[i] = math.max(tokens[i] - taken, -limit.full)
    end
  end

  -- Reply from the state after this call.
  local outcomes = {}
  local reset_after = 0
  for i = 1, #limits do
    local limit = limits[i]
    local level = tokens[i]
    local remaining = 0
    if level > 0 then
      remaining = floor_div(level, limit.refill_interval)
    end
    local need = asked * limit.refill_interval
    local retry = 0
    if asked > limit.capacity then
      retry = -1
    elseif level < need then
      retry = cap(stamp + ceil_div(need - level, limit.refill_amount) - now)
    end
    local reset = 0
    if level < limit.full then
      reset = cap(stamp + ceil_div(limit.full - level, limit.refill_amount) - now)
    end
    if reset > reset_after then
      reset_after = reset
    end
    outcomes[i] = { remaining, retry, reset }
  end
  if record then
    local values = {}
    for i = 1, #limits do
      values[i] = int_str(tokens[i])
    end
    redis.call('SET', call.key, state_string(call, stamp, values), 'PX', ttl_ms(call, reset_after))
  end
  return decide(allowed, outcomes)
end

return main()
end)

redis.register_function('ratelua_zset_log_v1', function(KEYS, ARGV)
-- ratelua zset_log v1: an exact sliding log of event times in one sorted
-- set, checked against one or more <max, window> limits.
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
-- TIME for the server clock).

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

local function sequence(k)
  local digits = int_str(k)
  return string.char(96 + #digits) .. digits
end

local function main()
  local call, err = parse_call({
    { 'max', 1, 1000000, '[1, 10^6]' },
    { 'window', 1, MAX_TIME, '[1, 2^52]' },
  })
  if call == nil then
    return err
  end
  local limits = call.limits
  local largest_max, widest = 0, 1
  for i = 1, #limits do
    if limits[i].max > largest_max then
      largest_max = limits[i].max
    end
    if limits[i].window > limits[widest].window then
      widest = i
    end
  end
  if call.count < 0 then
    redis.call('DEL', call.key)
    return fresh_reply(call, 'max')
  end
  local now = clock(call)
  local key = call.key

  -- The newest event: the last write's time, its sequence and the set size.
  local newest_time, newest_seq, size = nil, 0, 0
  local newest = redis.call('ZRANGE', key, -1, -1)
  if newest[1] then
    local time, seq, set_size = string.match(newest[1], '^(%d+):%l(%d+):(%d+)$')
    if time == nil then
      return fail('KEYS[1] holds a member that is not a zset_log v1 event: ' .. quote(newest[1]))
    end
    newest_time, newest_seq, size = tonumber(time), tonumber(seq), tonumber(set_size)
  end
  local stamp = effective(now, newest_time)

  -- Count each window and decide.
  local count = call.count
  local asked = math.max(count, 1)
  local allowed = true
  local windows = {}
  for i = 1, #limits do
    windows[i] = 0
    if size > 0 then
      windows[i] = redis.call('ZCOUNT', key, '(' .. int_str(stamp - limits[i].window), '+inf')
    end
    if windows[i] + asked > limits[i].max then
      allowed = false
    end
  end
  local record = count > 0 and (allowed or call.mode == '1')
  local added = 0
  if record then
    added = math.min(count, largest_max + 1)
    local keep = math.min(windows[widest], math.max(0, largest_max + 1 - added))
    local removable = size - keep
    if removable > 0 and removable >= keep then
      redis.call('ZREMRANGEBYRANK', key, 0, removable - 1)
      size = keep
    end
    local seq = 0
    if newest_time == stamp then
      seq = newest_seq
    end
    local score = int_str(stamp)
    for first = 1, added, 1000 do
      local batch = {}
      for j = first, math.min(first + 999, added) do
        batch[#batch + 1] = score
        batch[#batch + 1] = score .. ':' .. sequence(seq + j) .. ':' .. int_str(size + j)
      end
      redis.call('ZADD', key, unpack(batch))
    end
    size = size + added
    newest_time = stamp
    for i = 1, #limits do
      windows[i] = windows[i] + added
    end
  end

  -- Reply from the state after this call.
  local outcomes = {}
  local reset_after = 0
  for i = 1, #limits do
    local limit = limits[i]
    local window = windows[i]
    local retry = 0
    if asked > limit.max then
      retry = -1
    elseif not allowed and window + asked > limit.max then
      -- Wait until the (max - asked + 1)-th newest event leaves the window.
      local rank = limit.max - asked
      local time = stamp
      if rank >= added then
        local member = redis.call('ZRANGE', key, rank, rank, 'REV')
        time = tonumber(string.match(member[1], '^(%d+):'))
      end
      retry = cap(time + limit.window - now)
    end
    local reset = 0
    if window > 0 then
      reset = cap(newest_time + limit.window - now)
    end
    if reset > reset_after then
      reset_after = reset
    end
    outcomes[i] = { math.max(0, limit.max - window), retry, reset }
  end
  if record then
    redis.call('PEXPIRE', key, ttl_ms(call, reset_after))
  end
  return decide(allowed, outcomes)
end

return main()
end)
