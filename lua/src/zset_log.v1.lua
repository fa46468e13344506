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

-- #include _prelude.v1.lua

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
