-- ratelua zset_log v2: an exact sliding log of event times in one sorted
-- set, checked against one or more <max, window> limits. Same contract,
-- replies, state and semantics as v1 (see zset_log.v1.lua), at a lower cost;
-- its state is v1's, member for member.
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
-- TIME for the server clock). v2 makes no ZCOUNT for a window the newest
-- event is not in (it holds none) or when the set holds one event, and no
-- ZRANGE for a denied reply whose event is the newest or already read.

-- #include _prelude.v2.lua

local format = string.format
local count, unit, now, mode, n = header(2)
if count == nil then
  return unit
end
-- lim[2i-1], lim[2i]: max and window of limit i; lim[2n+i]: the events in
-- its window. largest: the largest max; wide: the widest window's index
-- (the first of them).
local lim = {}
local largest, wide = 0, 1
for i = 5, 3 + 2 * n, 2 do
  local max = int(i, 1, 1000000)
  if max == nil then
    return limit_error(i, 2, 'max', '[1, 10^6]')
  end
  local window = int(i + 1, 1, MAX_TIME)
  if window == nil then
    return limit_error(i + 1, 2, 'window', '[1, 2^52]')
  end
  lim[i - 4], lim[i - 3] = max, window
  if max > largest then
    largest = max
  end
  if window > lim[2 * wide] then
    wide = (i - 3) / 2
  end
end
local key = KEYS[1]
if count < 0 then
  return reset(lim, 2, n)
end
now = now or server_now(unit)

-- The newest event: the last write's time, its sequence and the set size
-- (a set written by this script holds exactly `size` members).
local last, seq, size = nil, 0, 0
local newest = redis.call('ZRANGE', key, '-1', '-1')[1]
if newest then
  local time, s, z = string.match(newest, '^(%d+):%l(%d+):(%d+)$')
  if time == nil then
    return fail('KEYS[1] holds a member that is not a zset_log event: ' .. got(newest))
  end
  last, seq, size = tonumber(time), tonumber(s), tonumber(z)
end
local stamp = now
if last ~= nil and last > now then
  stamp = last
end

-- Count each window and decide. A window the newest event is not in holds
-- none; a set of one event holds it in every window the newest is in.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for i = 1, n do
  local c = 0
  if size > 0 and last > stamp - lim[2 * i] then
    if size == 1 then
      c = 1
    else
      c = redis.call('ZCOUNT', key, format('(%d', stamp - lim[2 * i]), '+inf')
    end
  end
  lim[2 * n + i] = c
  if c + asked > lim[2 * i - 1] then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')
local added = 0
local top = last -- the newest event's time after this call
if record then
  added = count
  if added > largest + 1 then
    added = largest + 1
  end
  local keep = largest + 1 - added
  if lim[2 * n + wide] < keep then
    keep = lim[2 * n + wide]
  end
  local removable = size - keep
  if removable > 0 and removable >= keep then
    redis.call('ZREMRANGEBYRANK', key, '0', format('%d', removable - 1))
    size = keep
  end
  if last ~= stamp then
    seq = 0
  end
  -- Members are "<time>:<letter><seq>:<size>". Numbers are formatted with
  -- string.format('%d'): exact, and cheaper than '..' or a number argument.
  local score = format('%d', stamp)
  if added == 1 then
    local k = seq + 1
    if k < 10 then
      redis.call('ZADD', key, score, format('%s:a%d:%d', score, k, size + 1))
    else
      local len, ten = 2, 100
      while k >= ten do
        len, ten = len + 1, ten * 10
      end
      redis.call('ZADD', key, score, format('%s:%s%d:%d', score, string.char(96 + len), k, size + 1))
    end
  else
    local batch = {}
    local len, ten = 1, 10
    for first = 1, added, 1000 do
      local b = 0
      for j = first, math.min(first + 999, added) do
        local k = seq + j
        while k >= ten do
          len, ten = len + 1, ten * 10
        end
        batch[b + 1] = score
        batch[b + 2] = format('%s:%s%d:%d', score, string.char(96 + len), k, size + j)
        b = b + 2
      end
      redis.call('ZADD', key, unpack(batch, 1, b))
    end
  end
  size = size + added
  top = stamp
  for i = 2 * n + 1, 3 * n do
    lim[i] = lim[i] + added
  end
end

-- Reply from the state after this call: when allowed, the limit with the
-- fewest remaining decides; when denied, the one with the longest retry
-- (never first); ties go to the lower index.
local remaining, retry, reset_after, index = nil, 0, 0, 1
local fetched, fetched_time = -1, nil -- the last event read by rank, and its time
for i = 1, n do
  local max, window, c = lim[2 * i - 1], lim[2 * i], lim[2 * n + i]
  local left = max - c
  if left < 0 then
    left = 0
  end
  if remaining == nil or left < remaining then
    remaining = left
    if allowed then
      index = i
    end
  end
  if c > 0 then
    local reset = cap(top + window - now)
    if reset > reset_after then
      reset_after = reset
    end
  end
  if not allowed and retry ~= -1 then
    if asked > max then
      retry, index = -1, i
    elseif c + asked > max then
      -- Wait until the (max - asked + 1)-th newest event leaves the window:
      -- one of this call's, the newest before it, or an older one.
      local rank = max - asked
      local time = stamp
      if rank == fetched then
        time = fetched_time
      elseif rank > added then
        local r = format('%d', rank)
        local member = redis.call('ZRANGE', key, r, r, 'REV')
        time = tonumber(string.match(member[1], '^(%d+):'))
        fetched, fetched_time = rank, time
      elseif rank == added then
        time = last
      end
      local wait = cap(time + window - now)
      if wait > retry then
        retry, index = wait, i
      end
    end
  end
end
if record then
  redis.call('PEXPIRE', key, format('%d', ttl_ms(unit, reset_after)))
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
