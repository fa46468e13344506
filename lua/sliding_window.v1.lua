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
