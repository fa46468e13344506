-- ratelua concurrency v7: at most max slots held at once per key, each by
-- a lease that expires unless it is renewed, so that the slots of a holder
-- that died come back after the lease time.
--
-- KEYS[1]  the state key (the only key read or written)
-- ARGV[1]  eventCount. In mode '0': > 0 acquire that many slots as one
--          lease and decide; 0 decide whether one more slot is free
--          (writes nothing); < 0 drop every lease. In modes 'renew' and
--          'release': the slots of the lease, as acquired, 1..10^6
-- ARGV[2]  unit of now, of the lease time and of the replies: 's', 'ms'
--          or 'us'
-- ARGV[3]  now in that unit, or '' for the server clock (TIME)
-- ARGV[4]  mode: '0' acquire (a denied acquire writes nothing); 'renew'
--          extend lease ARGV[7] to now + lease (never shorten it);
--          'release' give lease ARGV[7] back
-- ARGV[5]  max: slots held at once, 1..10^6 (one limit per call: a key
--          holds one set of leases)
-- ARGV[6]  lease: the lease time, in the unit, 1..2^52
-- ARGV[7]  in modes 'renew' and 'release': the lease id, 1..2^52. In mode
--          '0', optional: the id the caller chose for the lease it
--          acquires (random, so that a caller that did not get the reply
--          can release it by that id); refused when a live lease holds it.
--          Without it the key's counter numbers the lease
-- reply    {allowed, remaining, retry_after, reset_after, limit_index}:
--          allowed      1 when the slots were acquired (for 0: one slot
--                       is free), or the lease renewed or released
--          remaining    free slots after the call, max - held, >= 0
--          retry_after  0 when allowed; a denied acquire: the wait until
--                       enough leases expire, -1 if eventCount > max; a
--                       lease not held (expired, released, dropped by a
--                       reset, or of other slots): -1
--          reset_after  the time until no lease is held
--          limit_index  the lease id of an acquired, renewed or released
--                       lease; 1 for a denied acquire and for 0; 0 after
--                       a reset and for a lease not held
--
-- Every integer is canonical decimal text: '0', or an optional '-' then a
-- digit 1-9 then digits ('-0', '+1', '007', ' 1', '1e3' are refused). Bad
-- input is an error reply 'ERR ratelua: ...' naming the argument, and
-- writes nothing.
--
-- A lease is held at now while its expiry > now. An acquire of n slots is
-- allowed when held + n <= max; it first drops the expired leases, then
-- takes the caller's id or the counter's next id that no live lease holds.
-- The executable specification is internal/model/concurrency.go.
--
-- The clock: a now earlier than the last acquire's or renewal's time
-- counts as that time. The server's TIME is read with an empty now, and
-- with a caller's now more than one lease time (ARGV[6]) from the last
-- write or on a key without one: neither now nor the last write then
-- counts later than TIME, so a caller clock far ahead cannot expire
-- others' live leases nor hold the key beyond the lease time. Replies
-- count from the time the call was decided at.
--
-- State: a sorted set. The member '#' counts the lease ids handed out
-- (score -<last id>, below every expiry); the member '@' is the time t of
-- the last acquire or renewal (score t - 2^53, below 0). A key of another
-- type, or a sorted set with neither member, is another script's: refused,
-- left unchanged. A lease of n slots is the
-- members '<id>' and '<id>.2' .. '<id>.<n>', each scored by the lease's
-- expiry in the unit, so that the live slots are ZCOUNT (now +inf. TTL: a
-- write sets it to the latest expiry (ms, rounded up), and on a key that
-- existed never shortens it (PEXPIRE GT), so the counter outlives every
-- lease it numbered: while a holder may think it holds an id, that id is
-- not handed out again (a reset or a release keeps '#' and the TTL). The
-- unit must not change for a key; max and the lease time may.
--
-- What v6 does apart from v5: the prelude's helpers are macros expanded in
-- place (no closure built for them on a call); an acquire may name its own
-- lease id (ARGV[7]); the clock rule above and the member '@'; another
-- script's state is refused. The state stays v5's otherwise (state version
-- 5: v5 ignores '@', and v6 reads v5's keys).

-- What v7 does apart from v6: nothing yet (v7 is in development; it will
-- hold reserve and settle, issue 31, and the cost work of issue 35). It
-- reads and writes v6's state.
-- #include _prelude.v7.lua

-- refused is the error reply for ARGV[i], which must be `what`: the value
-- is quoted (at most 40 bytes, control and non-ASCII bytes escaped).
local function refused(ARGV, i, what)
  local value, shown = ARGV[i], 'nothing'
  if value then
    shown = "'" .. (string.gsub(string.sub(value, 1, 40), '[^ -~]', function(byte)
      return string.format('\\x%02x', string.byte(byte))
    end))
    if #value > 40 then
      shown = shown .. '...'
    end
    shown = shown .. "'"
  end
  return redis.error_reply('ERR ratelua: ARGV[' .. i .. '] ' .. what .. ', got ' .. shown)
end

-- until_last is the time from now until the latest expiry in the set of
-- key, 0 when no lease is held (the highest score is then an expired
-- lease or '#'), at most 2^52.
local function until_last(key, now)
  local last = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2]
  if last == nil then
    return 0
  end
  local wait = last - now
  if wait < 0 then
    return 0
  elseif wait > MAX_TIME then
    return MAX_TIME
  end
  return wait
end

-- each_member sends the command head (a table: the command, the key and
-- its options) for every member of lease `name` of `slots` slots, each
-- member preceded by `score` when set, at most 2000 arguments at a time.
local function each_member(head, name, slots, score)
  local batch, b = {}, #head
  for i = 1, b do
    batch[i] = head[i]
  end
  for k = 1, slots do
    if score then
      batch[b + 1] = score
      b = b + 1
    end
    if k == 1 then
      batch[b + 1] = name
    else
      batch[b + 1] = string.format('%s.%d', name, k)
    end
    b = b + 1
    if b >= 2000 or k == slots then
      redis.call(unpack(batch, 1, b))
      b = #head
    end
  end
end

-- #call: what follows runs on every call (in ratelua_v7, the function body)
local format, find = string.format, string.find
local unit, mode, now = ARGV[2], ARGV[4], false
local count = 1
if ARGV[1] ~= '1' then
  -- #expand integer(count, ARGV[1], -MAX_TIME, MAX_TIME)
end
if ARGV[3] ~= '' then
  -- Canonical: '0', or a digit 1-9 then digits (what '%d' writes), found
  -- by a pattern and read by arithmetic (issue 35: tonumber converts its
  -- argument twice and format makes a string, 1.5k instructions more an
  -- argument). A call of fewer than 3 arguments has no ARGV[3].
  now = ARGV[3]
  if now == '0' or (now and find(now, '^[1-9]%d*$')) then
    now = now + 0
    if now > MAX_TIME then
      now = nil
    end
  else
    now = nil
  end
end
if count == nil or now == nil or #KEYS ~= 1 or (unit ~= 'ms' and unit ~= 's' and unit ~= 'us') then
  -- #expand rare(helpers)
  return helpers.refuse(KEYS, ARGV, 2)
end
local acquire = mode == '0'
if not acquire and mode ~= 'renew' and mode ~= 'release' then
  return refused(ARGV, 4, "mode must be '0' (acquire), 'renew' or 'release'")
end
if not acquire and (count < 1 or count > 1000000) then
  return refused(ARGV, 1, 'eventCount must be the slots of the lease, an integer in [1, 10^6], in mode ' .. mode)
end
if acquire and #ARGV ~= 6 and #ARGV ~= 7 then
  return redis.error_reply("ERR ratelua: expected 2 or 3 arguments after ARGV[4] in mode '0' (max, lease, and the caller's lease id), got " .. math.max(#ARGV - 4, 0))
elseif not acquire and #ARGV ~= 7 then
  return redis.error_reply("ERR ratelua: expected 3 arguments after ARGV[4] in mode '" .. mode .. "' (max, lease, lease id), got " .. math.max(#ARGV - 4, 0))
end
-- (checked as now is)
local max, lease = nil, nil
if find(ARGV[5], '^[1-9]%d*$') then
  max = ARGV[5] + 0
end
if find(ARGV[6], '^[1-9]%d*$') then
  lease = ARGV[6] + 0
end
if not (max and max <= 1000000) then
  return refused(ARGV, 5, 'max must be a canonical integer in [1, 10^6]')
end
if not (lease and lease <= MAX_TIME) then
  return refused(ARGV, 6, 'lease must be a canonical integer in [1, 2^52]')
end
local key = KEYS[1]
-- name: the lease id's text, of a renewal or release, or the caller's own
-- id for an acquire (ARGV[7] of mode '0'); nil for an acquire without one.
local name, id = ARGV[7], nil
if name then
  if find(name, '^[1-9]%d*$') then
    id = name + 0
  end
  if not (id and id <= MAX_TIME) then
    return refused(ARGV, 7, 'the lease id must be a canonical integer in [1, 2^52]')
  end
end

-- The marks '#' (the counter) and '@' (the last write's time), and in
-- modes renew and release the lease's first, last and next member, read
-- by one ZMSCORE that also tells the key's shape: another type is an
-- error here, and a sorted set without either mark is another script's.
local marks
if acquire then
  if name and count > 0 then
    marks = redis.pcall('ZMSCORE', key, '#', '@', name)
  else
    marks = redis.pcall('ZMSCORE', key, '#', '@')
  end
elseif count == 1 then
  marks = redis.pcall('ZMSCORE', key, '#', '@', name, name .. '.2')
else
  marks = redis.pcall('ZMSCORE', key, '#', '@', name, format('%s.%d', name, count), format('%s.%d', name, count + 1))
end
local fresh = false
if type(marks) ~= 'table' or marks.err or not marks[1] and not marks[2] then
  if type(marks) == 'table' and not marks.err then
    fresh = redis.call('EXISTS', key) == 0
  end
  if not fresh then
    local kind = redis.call('TYPE', key)
    return redis.error_reply("ERR ratelua: KEYS[1] holds a " .. tostring(kind.ok or kind)
      .. " that is not a concurrency state (another script's or version's): left unchanged")
  end
end

-- A reset drops every lease and keeps the counter and the last write's
-- time, with the TTL.
if acquire and count < 0 then
  redis.call('ZREMRANGEBYSCORE', key, '0', '+inf')
  return { 1, max, 0, 0, 0 }
end

-- The time of the call. '@' holds the last acquire's or renewal's time t
-- as the score t - 2^53 (below 0, below every expiry). A now earlier than
-- it counts as that time. The server's TIME is read for the server clock,
-- and for a caller's now more than one lease time from the last write (or
-- on a fresh key): neither now nor the last write then counts later than
-- TIME, so a caller clock ahead of the server's cannot expire others'
-- leases early nor hold the key beyond the lease time.
local last = false
if marks[2] then
  last = marks[2] + 2 * MAX_TIME
end
local server = false
if not now then
  -- #expand server_now(now, unit)
  server = now
elseif not last or now - last > lease or last - now > lease then
  -- #expand server_now(server, unit)
end
if server then
  if now > server then
    now = server
  end
  if last and last > server then
    last = server
  end
end
if last and now < last then
  now = last
end
local live = format('(%d', now)
local mark = format('%d', now - 2 * MAX_TIME)

if acquire then
  if name and count > 0 and marks[3] and marks[3] + 0 > now then
    return refused(ARGV, 7, 'the lease id is held by a live lease: choose another')
  end
  local held = redis.call('ZCOUNT', key, live, '+inf')
  local asked = count
  if asked < 1 then
    asked = 1
  end
  local remaining = max - held
  if remaining < 0 then
    remaining = 0
  end
  if held + asked <= max then
    if count == 0 then
      local reset_after = 0
      if held > 0 then
        reset_after = until_last(key, now)
      end
      return { 1, remaining, 0, reset_after, 1 }
    end
    redis.call('ZREMRANGEBYSCORE', key, '0', format('%d', now))
    local expiry = format('%d', now + lease)
    if name then
      -- The caller's id (not live: checked above; an expired one is gone).
      if count == 1 then
        redis.call('ZADD', key, expiry, name, mark, '@')
      else
        each_member({ 'ZADD', key }, name, count, expiry)
        redis.call('ZADD', key, mark, '@')
      end
    else
      -- The next id of the counter that no live lease holds (a caller may
      -- have chosen it).
      id = 1
      if marks[1] then
        id = 1 - marks[1]
      end
      name = format('%d', id)
      if count == 1 then
        while redis.call('ZADD', key, 'NX', expiry, name) == 0 do
          id = id + 1
          name = format('%d', id)
        end
      else
        while redis.call('ZSCORE', key, name) do
          id = id + 1
          name = format('%d', id)
        end
        each_member({ 'ZADD', key }, name, count, expiry)
      end
      redis.call('ZADD', key, format('%d', -id), '#', mark, '@')
    end
    local reset_after = until_last(key, now)
    -- A fresh key has no TTL yet: GT would treat it as infinite.
    local ttl
    -- #expand ttl_ms(ttl, unit, reset_after)
    if fresh then
      redis.call('PEXPIRE', key, ttl)
    else
      redis.call('PEXPIRE', key, ttl, 'GT')
    end
    return { 1, remaining - count, 0, reset_after, id }
  end
  -- Denied. Wait until the need-th earliest live slot expires.
  local retry, reset_after = -1, 0
  if held > 0 then
    reset_after = until_last(key, now)
  end
  if asked <= max then
    local need = held + asked - max
    if need == held then
      retry = reset_after
    else
      local expiry = redis.call('ZRANGE', key, live, '+inf', 'BYSCORE', 'LIMIT', format('%d', need - 1), '1', 'WITHSCORES')[2]
      retry = expiry - now
      if retry > MAX_TIME then
        retry = MAX_TIME
      end
    end
  end
  return { 0, remaining, retry, reset_after, 1 }
end

-- Renew or release lease ARGV[7] of count slots: it is held when '<id>'
-- (and '<id>.<count>') expire after now and '<id>.<count + 1>' does not
-- exist; the slots of one lease always share one score. marks[3..] are
-- these members' scores.
local held = marks[3] and marks[3] + 0 > now and marks[#marks - 1] and not marks[#marks]
if held then
  if mode == 'renew' then
    local expiry = format('%d', now + lease)
    if count == 1 then
      redis.call('ZADD', key, 'XX', 'GT', expiry, name, mark, '@')
    else
      each_member({ 'ZADD', key, 'XX', 'GT' }, name, count, expiry)
      redis.call('ZADD', key, 'XX', 'GT', mark, '@')
    end
  else
    if count == 1 then
      redis.call('ZREM', key, name)
    else
      each_member({ 'ZREM', key }, name, count, nil)
    end
  end
end
local holding = redis.call('ZCOUNT', key, live, '+inf')
local remaining, reset_after = max - holding, 0
if remaining < 0 then
  remaining = 0
end
if holding > 0 then
  reset_after = until_last(key, now)
end
if not held then
  return { 0, remaining, -1, reset_after, 0 }
end
if mode == 'renew' then
  local ttl
  -- #expand ttl_ms(ttl, unit, reset_after)
  redis.call('PEXPIRE', key, ttl, 'GT')
end
return { 1, remaining, 0, reset_after, id }
