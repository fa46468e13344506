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
