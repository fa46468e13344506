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

-- #include _prelude.v1.lua

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
