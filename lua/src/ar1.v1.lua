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

-- #include _prelude.v1.lua

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
