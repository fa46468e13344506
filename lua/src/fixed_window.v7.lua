-- ratelua fixed_window v7: at most max events in a fixed window, counted
-- as envoyproxy/ratelimit counts them (one integer counter per window,
-- INCRBY by the hits, EXPIRE in seconds), so that a caller naming the
-- reference's own key shares its counters.
--
-- KEYS[1]  the state key: the counter of one window. The caller names the
--          window in the key (the reference's keys end in the window's
--          start); the script does not read the window from it
-- ARGV[1]  eventCount: > 0 count that many events and decide; 0 decide
--          whether one more event would pass, writing nothing; < 0
--          delete the counter (a reset)
-- ARGV[2]  unit of now, of the window and of the replies: 's', 'ms' or
--          'us'
-- ARGV[3]  now in that unit, or '' for the server clock (TIME)
-- ARGV[4]  mode: '1' every call counts its events, allowed or not (the
--          reference's INCRBY); '0' a denied call counts nothing
-- ARGV[5]  max: events allowed in the window, 0..2^52 (exactly one limit:
--          a key is one counter)
-- ARGV[6]  window: the window's length in the unit, 1..2^52; the window
--          of now starts at floor(now / window) * window
-- ARGV[7]  expire: the counter's EXPIRE in whole seconds, 1..2^52, set by
--          every call that counts (the reference: the unit's seconds plus
--          its jitter)
-- reply    {allowed, remaining, retry_after, reset_after, limit_index}:
--          allowed      1 when the count after the call's events is at
--                       most max (for 0: count + 1 <= max)
--          remaining    max - the count after the call, >= 0
--          retry_after  0 when allowed; else the time until the window
--                       ends, -1 if eventCount > max
--          reset_after  the time until the window ends, 0 when the count
--                       is 0
--          limit_index  1; 0 after a reset
--
-- Every integer is canonical decimal text: '0', or an optional '-' then a
-- digit 1-9 then digits. Bad input is an error reply 'ERR ratelua: ...'
-- naming the argument, and writes nothing; a key holding anything else
-- than an integer counter is refused and left unchanged.
--
-- State: the counter, a string holding an integer (what INCRBY keeps),
-- with the TTL of the last call that counted (EXPIRE, seconds). In mode
-- '1' a call is INCRBY and EXPIRE and nothing else, as the reference's
-- pipeline: a count may pass max and is never capped. The executable
-- specification is internal/model/fixed_window.go.
--
-- New in v7 (there is no earlier version).
-- #include _prelude.v7.lua

-- #call: what follows runs on every call (in ratelua_v7, the function body)
local tonumber, format = tonumber, string.format
local unit, mode, now = ARGV[2], ARGV[4], nil
local count = 1
if ARGV[1] ~= '1' then
  -- #expand integer(count, ARGV[1], -MAX_TIME, MAX_TIME)
end
local clock = ARGV[3]
if clock ~= '' then
  -- #expand integer(now, clock, 0, MAX_TIME)
end
if count == nil or (clock ~= '' and now == nil) or #KEYS ~= 1 or (unit ~= 'ms' and unit ~= 's' and unit ~= 'us')
  or (mode ~= '0' and mode ~= '1') then
  -- #expand rare(helpers)
  return helpers.refuse(KEYS, ARGV, 3)
end
if #ARGV ~= 7 then
  return redis.error_reply('ERR ratelua: expected exactly 1 limit of 3 integers after ARGV[4] (max, window, expire), got '
    .. math.max(#ARGV - 4, 0) .. ' arguments')
end
local max, window, expire
-- #expand integer(max, ARGV[5], 0, MAX_TIME)
-- #expand integer(window, ARGV[6], 1, MAX_TIME)
-- #expand integer(expire, ARGV[7], 1, MAX_TIME)
if max == nil then
  -- #expand rare(helpers)
  return helpers.refuse(KEYS, ARGV, 3, 5, 'max', '[0, 2^52]')
elseif window == nil then
  -- #expand rare(helpers)
  return helpers.refuse(KEYS, ARGV, 3, 6, 'window', '[1, 2^52]')
elseif expire == nil then
  -- #expand rare(helpers)
  return helpers.refuse(KEYS, ARGV, 3, 7, 'expire', '[1, 2^52]')
end
local key = KEYS[1]
if count < 0 then
  -- #expand rare(helpers)
  return helpers.fresh(KEYS, ARGV, 3)
end
if now == nil then
  -- #expand server_now(now, unit)
end
-- The window of now ends at its start + window.
local left = window - now % window

local after
if mode == '1' and count > 0 then
  -- The reference's pipeline: INCRBY, then EXPIRE, whatever the count.
  after = redis.pcall('INCRBY', key, format('%d', count))
  if type(after) == 'table' then
    return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than fixed_window state (an integer counter): '
      .. tostring(after.err))
  end
  redis.call('EXPIRE', key, format('%d', expire))
else
  local stored = redis.pcall('GET', key)
  -- #expand wrong_type(stored, 'fixed_window')
  local held = 0
  if stored then
    held = tonumber(stored)
    if held == nil or held < 0 or not string.find(stored, '^%d+$') then
      return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than fixed_window state (an integer counter): '
        .. format('%q', string.sub(stored, 1, 40)))
    end
  end
  after = held
  if count == 0 then
    -- Would one more event pass? Nothing is written.
    if held + 1 <= max then
      return { 1, max - held, 0, held > 0 and left or 0, 1 }
    end
    return { 0, math.max(max - held, 0), left, held > 0 and left or 0, 1 }
  end
  if held + count <= max then
    after = redis.call('INCRBY', key, format('%d', count))
    redis.call('EXPIRE', key, format('%d', expire))
  end
  if after == held then
    -- Denied in mode '0': nothing counted.
    local retry = left
    if count > max then
      retry = -1
    end
    return { 0, math.max(max - held, 0), retry, held > 0 and left or 0, 1 }
  end
end
if after <= max then
  return { 1, max - after, 0, left, 1 }
end
local retry = left
if count > max then
  retry = -1
end
local reset = left
if after <= 0 then
  reset = 0
end
return { 0, 0, retry, reset, 1 }
