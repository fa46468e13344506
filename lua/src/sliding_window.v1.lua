-- ratelua sliding_window v1: several <max, duration, resolution> limits over
-- time buckets, all in one hash.
--
-- KEYS[1]  the state key (the only key read or written)
-- ARGV[1]  eventCount: > 0 record that many events and decide; 0 decide
--          whether one more event would pass (writes nothing); < 0 delete
--          the state and reply as for a fresh key
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
-- State: a hash. Field "m" is "<time> <signature> <total_1> ... <total_n>":
-- the time of the last write in the unit, the first 8 hex digits of the
-- SHA1 of the unit and limits (other limits on the same key start fresh),
-- and per limit the events in its ring of N = ceil(duration / resolution)
-- buckets ending at the last write. Field "<i>.<b mod N>" is "<b>:<count>"
-- for bucket b of limit i; a field whose bucket has left the ring is stale
-- and ignored until it is reused. A bucket's count is capped at max + 1
-- (mode 1), which changes no reply. TTL: reset_after. A now earlier than
-- the last write is treated as the time of the last write.
-- Cost: HGET, HMGET, HSET, PEXPIRE per recorded decision whatever the number
-- of limits and buckets (plus TIME for the server clock); a denied reply
-- reads buckets from the oldest until it finds the retry time.

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

  -- Read the ring heads and totals.
  local last = nil
  local totals = {}
  local meta = redis.call('HGET', key, 'm')
  if meta then
    local fields = {}
    for word in string.gmatch(meta, '%S+') do
      fields[#fields + 1] = word
    end
    if #fields == #limits + 2 and fields[2] == call.signature then
      last = tonumber(fields[1])
      for i = 1, #limits do
        totals[i] = tonumber(fields[i + 2])
      end
    else
      redis.call('DEL', key)
    end
  end
  local stamp = now
  if last ~= nil and last > stamp then
    stamp = last
  end

  -- Advance every ring to the effective time: find the buckets to read.
  local names, wanted = {}, {}
  local function want(i, limit, bucket)
    names[#names + 1] = slot_field(i, limit, bucket)
    wanted[#wanted + 1] = { i, bucket }
  end
  for i = 1, #limits do
    local limit = limits[i]
    limit.head = floor_div(stamp, limit.resolution)
    limit.low = floor_div_signed(stamp - limit.duration, limit.resolution)
    -- known[b - base] is the count of bucket b once read (or written);
    -- every bucket this call touches lies in (head - 2N, head], so the
    -- offsets stay small and the table stays a dense array.
    limit.known = {}
    limit.base = limit.head - 2 * limit.buckets
    if last == nil then
      totals[i] = 0
      limit.written = -1
    else
      limit.written = floor_div(last, limit.resolution)
      local gap = limit.head - limit.written
      if gap >= limit.buckets then
        totals[i] = 0
        limit.written = -1
      else
        for bucket = limit.written + 1 - limit.buckets, limit.head - limit.buckets do
          if bucket >= 0 then
            want(i, limit, bucket) -- leaving the ring
          end
        end
        if gap == 0 then
          want(i, limit, limit.head)
        end
        local partial = limit.head - limit.buckets + 1
        if limit.low == partial and partial <= limit.written and partial >= 0 then
          want(i, limit, partial)
        end
      end
    end
  end
  local values = hmget(key, names)
  local function remember(i, bucket, value)
    local limit = limits[i]
    local count = 0
    if value then
      local stored, n = string.match(value, '^(%d+):(%d+)$')
      if stored ~= nil and tonumber(stored) == bucket then
        count = tonumber(n)
      end
    end
    limit.known[bucket - limit.base] = count
    return count
  end
  for j = 1, #wanted do
    local i, bucket = wanted[j][1], wanted[j][2]
    local count = remember(i, bucket, values[j])
    if bucket <= limits[i].head - limits[i].buckets then
      totals[i] = totals[i] - count
    end
  end

  -- Count each window and decide.
  local count = call.count
  local asked = math.max(count, 1)
  local allowed = true
  local windows = {}
  for i = 1, #limits do
    local limit = limits[i]
    local window = totals[i]
    local partial = limit.head - limit.buckets + 1
    local partial_count = limit.known[partial - limit.base]
    if limit.low == partial and partial_count ~= nil then
      window = window - partial_count
    end
    windows[i] = window
    if window + asked > limit.max then
      allowed = false
    end
  end
  local record = count > 0 and (allowed or call.mode == '1')
  if record then
    for i = 1, #limits do
      local limit = limits[i]
      local current = limit.known[limit.head - limit.base] or 0
      local updated = math.min(current + count, limit.max + 1)
      limit.known[limit.head - limit.base] = updated
      totals[i] = totals[i] + updated - current
      windows[i] = windows[i] + updated - current
      limit.written = limit.head
    end
  end

  -- retry_at returns the time at which the oldest events of limit i have
  -- left its window so that `asked` events fit, reading buckets as needed.
  local function retry_at(i)
    local limit = limits[i]
    local excess = windows[i] + asked - limit.max
    local bucket = math.max(limit.low + 1, 0)
    local chunk = 16
    while bucket <= limit.written do
      local missing = {}
      local last_bucket = math.min(bucket + chunk - 1, limit.written)
      for b = bucket, last_bucket do
        if limit.known[b - limit.base] == nil then
          missing[#missing + 1] = b
        end
      end
      if #missing > 0 then
        local fields = {}
        for j = 1, #missing do
          fields[j] = slot_field(i, limit, missing[j])
        end
        local read = hmget(key, fields)
        for j = 1, #missing do
          remember(i, missing[j], read[j])
        end
      end
      for b = bucket, last_bucket do
        excess = excess - limit.known[b - limit.base]
        if excess <= 0 then
          return b * limit.resolution + limit.duration
        end
      end
      bucket = last_bucket + 1
      chunk = math.min(chunk * 2, 1000)
    end
    -- Unreachable while the ring totals are consistent with the buckets.
    error('ratelua: sliding_window state of ' .. key .. ' is inconsistent')
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
      retry = cap(retry_at(i) - now)
    end
    local reset = 0
    if window > 0 then
      reset = cap(limit.written * limit.resolution + limit.duration - now)
    end
    if reset > reset_after then
      reset_after = reset
    end
    outcomes[i] = { math.max(0, limit.max - window), retry, reset }
  end
  if record then
    local fields = { 'm', '' }
    local meta_parts = { int_str(stamp), call.signature }
    for i = 1, #limits do
      local limit = limits[i]
      meta_parts[#meta_parts + 1] = int_str(totals[i])
      fields[#fields + 1] = slot_field(i, limit, limit.head)
      fields[#fields + 1] = int_str(limit.head) .. ':' .. int_str(limit.known[limit.head - limit.base])
    end
    fields[2] = table.concat(meta_parts, ' ')
    redis.call('HSET', key, unpack(fields))
    redis.call('PEXPIRE', key, ttl_ms(call, reset_after))
  end
  return decide(allowed, outcomes)
end

return main()
