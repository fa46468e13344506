-- ratelua zset_log v7: an exact sliding log of event times in one sorted
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
--          max     events allowed in any window, 1..10^4 (bounds a call's
--                  work: it adds or drops at most max + 1 members)
--          window  in the unit, 1..2^52
-- reply    {allowed, remaining, retry_after, reset_after, limit_index}
--
-- Every integer is canonical decimal text: '0', or an optional '-' then a
-- digit 1-9 then digits ('-0', '+1', '007', ' 1', '1e3' are refused). Bad
-- input is an error reply 'ERR ratelua: ...' naming the argument, and
-- writes nothing.
--
-- At time now a limit counts the events at times t > now - window. Events
-- are allowed when count + eventCount <= max for every limit, so no window
-- of any limit ever holds more than max admitted events. Fresh means no
-- event is in any window; reset_after is the time until then. The
-- executable specification is internal/model/zset_log.go.
--
-- State: a sorted set, one member per event, scored by its time in the
-- unit, named "<time>:<index>:<base>": index numbers the events of the key
-- from 1 (a length letter then digits, so that names of one time sort in
-- event order) and base is the index of the oldest member left in the set
-- when that event was added. The newest member tells the last write's time
-- and which indexes the set holds (so the set's size). Only the
-- newest max+1 events (largest max) inside the widest window can change a
-- reply; older ones are dropped by rank once they are at least half of the
-- set. TTL: reset_after. A now earlier than the newest event is treated as
-- the time of the newest event. The unit must not change for a key; the
-- limits may (the events are kept whatever the limits). This is v3's
-- layout, and v5 replies as v4 and v3 do to every call.
--
-- What v4 does apart from v3: the header is read inline, every integer is
-- checked by a pattern (no string is made), and the prelude builds fewer
-- functions per EVALSHA. The limits are checked on every call, as the set
-- keeps no copy of them. What v5 does apart from v4: one limit (the common
-- case) takes a path with locals only, its limit checked inline, its score
-- and (unit ms) TTL the text of ARGV when they are equal.
--
-- What v6 does apart from v5: the replies and the state are v5's (v5 and
-- v6 may run on one key); the cost is lower. The prelude's helpers are
-- macros expanded in place, so a call builds no function (v5 built four
-- on every EVALSHA). A window is counted as the set's size (from the
-- newest event's index and base) minus ZCOUNT -inf..window start, an
-- integer reply from a scan that stops at the first event inside the
-- window, instead of v5's read and parse of the oldest event inside it
-- (one limit, while the set is too small for a denial) or ZCOUNT window start..+inf, which scans every event in the
-- window (several limits). A denied reply reads its retry event by rank
-- when the set was counted by ZCOUNT (a set large enough for a denial
-- reads the oldest event in the window as v5 does, and a denial at
-- saturation reuses it). now (and with one limit max and window) is
-- checked as canonical by a pattern and read as text + 0 (v5 compared each with format('%d'), a
-- sprintf per argument); a new member's name takes the newest member's
-- base as text when it is unchanged, and its letter without a call below
-- 10^4 events.

-- What v7 does apart from v6: reserve and settle (issue 31, ARGV[4]
-- 'reserve:<id>:<lifetime>' and 'settle:<id>', lua/README.md), on v6's
-- state for a key that never held a reservation. A reservation holds its
-- units until it is settled (issue 32): it records no event; every check
-- of a limit counts, besides the events in its window, the estimate of
-- every reservation held (live, or expired and not yet converted), in
-- every window; a settle records the units used (actual) as events at
-- now; a call that may write (eventCount > 0, a settle that applies)
-- first converts each reservation it finds expired into its estimate as
-- events at its expiry. Why no window then admits more than max when a
-- holder admits the units of a reservation anywhere in [reserve,
-- settle]: take a window and its last admitting check c (a call or a
-- reserve admitted, at or before the window's end); every reservation
-- with a unit in the window was reserved by c, and at c was either held
-- (counted in full) or settled or converted at a time s >= the unit's
-- admission, so s is in the window and in c's (which starts earlier), and
-- its units counted there; every plain event in the window was admitted
-- by c and is in c's window. So c's check, count + asked <= max, bounds
-- every admission in the window.
--
-- v7's cost (issue 35): the common call (one limit, eventCount 1, mode
-- '0', unit ms) is decided first, by a shorter path with the same
-- commands and replies; there, a set of max events or more is first asked
-- for its max-th newest event (ZRANGE by rank from the end, one member):
-- inside the window it denies the call and is its retry event, one read
-- where v6 read the oldest event in the window by score.
-- #include _prelude.v7.lua

-- MAX_RESERVATIONS bounds the reservations one key holds (open, or
-- expired and not yet dropped; a settled one is forgotten at its settle):
-- a reserve of a new id on a key holding that many open ones is refused,
-- so a key cannot grow without bound nor a call take unbounded work.
local MAX_RESERVATIONS = 1000

-- prune drops the expired reservations (and any settled record) of a key
-- holding MAX_RESERVATIONS records (the caller's reserve of a new id then
-- fits), less RECORDS (the members below the events) by those dropped, or
-- returns the error reply when that many are open, before anything is
-- written.
-- #define prune(RECORDS)
do
  local gone, open = {}, 0
  for _, m in ipairs(redis.call('ZRANGE', key, '-inf', '(0', 'BYSCORE')) do
    local kind, expiry = string.match(m, '^([rs])%d+:(%d+)')
    if kind == 'r' and expiry + 0 > now then
      open = open + 1
    elseif kind then
      gone[#gone + 1] = m
    end
  end
  if open >= MAX_RESERVATIONS then
    return redis.error_reply('ERR ratelua: KEYS[1] holds ' .. MAX_RESERVATIONS .. ' open reservations, the most'
      .. ' a key holds: settle or cancel one, or wait for its lifetime to pass, before ARGV[4] reserves another')
  end
  if #gone > 0 then
    redis.call('ZREM', key, unpack(gone))
  end
  RECORDS = RECORDS - #gone
end
-- #end

-- event_name sets OUT to the name of the event numbered INDEX scored SCORE
-- (text) in a set whose oldest member is numbered BASE (text): the index
-- after a letter for its number of digits (a: 1 digit, b: 2, ...), then
-- the base. Below 10^4 the index is written by format('%d') and the name
-- joined by .. (issue 35): cheaper than one format of the whole name, and
-- than joining the number itself, which Lua writes by '%.14g' (about 2.1k
-- instructions, against 1.4k for format('%d')).
-- #define event_name(OUT, SCORE, INDEX, BASE)
if INDEX == 1 then
  OUT = SCORE .. ':a1:' .. BASE -- a fresh key's
elseif INDEX < 10 then
  OUT = SCORE .. ':a' .. format('%d', INDEX) .. ':' .. BASE
elseif INDEX < 100 then
  OUT = SCORE .. ':b' .. format('%d', INDEX) .. ':' .. BASE
elseif INDEX < 1000 then
  OUT = SCORE .. ':c' .. format('%d', INDEX) .. ':' .. BASE
elseif INDEX < 10000 then
  OUT = SCORE .. ':d' .. format('%d', INDEX) .. ':' .. BASE
else
  local digits, ten = 5, 100000
  while INDEX >= ten do
    digits, ten = digits + 1, ten * 10
  end
  OUT = format('%s:%s%d:%s', SCORE, string.char(96 + digits), INDEX, BASE)
end
-- #end

-- #call: what follows runs on every call (in ratelua_v7, the function body)
-- KEYS, ARGV and redis as locals: a global is a table lookup on every use
-- (about 150 instructions; a local, a register).
local KEYS, ARGV, redis = KEYS, ARGV, redis
local string = string
local format, match, find = string.format, string.match, string.find
-- The common call first (issue 35): one limit, count 1, mode '0', unit
-- ms, a key holding plain events (or nothing) whose newest is not after
-- now. It decides as the one-limit path below, by the same commands and
-- arithmetic, with fewer steps (no count, mode or reservation to read, no
-- clock behind, no batch). Any other call, or one of these that finds
-- anything else, leaves the block by break (a jump: no test of a flag on
-- the way out) and goes on having written nothing, with the newest
-- event's read (got_top) and the server's time (got_now) when it made
-- them: no command is sent twice. (Its bounds are written as constants: a
-- local holding one is a register and a load.)
local got_top, got_now
repeat
  if not (#ARGV == 6 and ARGV[1] == '1' and ARGV[4] == '0' and ARGV[2] == 'ms' and #KEYS == 1) then
    break
  end
  local score, m, w = ARGV[3], ARGV[5], ARGV[6]
  local now
  if score == '' then
    if not find(m .. ' ' .. w, '^[1-9]%d* [1-9]%d*$') then
      break
    end
    -- #expand server_now(now, 'ms')
    got_now, score = now, format('%d', now)
  elseif find(score .. ' ' .. m .. ' ' .. w, '^[1-9]%d* [1-9]%d* [1-9]%d*$') then
    now = score + 0
    if now > 4503599627370496 then
      break
    end
  else
    break
  end
  local max, window = m + 0, w + 0
  if max > 10000 or window > 4503599627370496 then
    break
  end
  local key = KEYS[1]
  got_top = redis.pcall('ZRANGE', key, '-1', '-1')
  if got_top.err then
    break
  end
  local top = got_top[1]
  if top == nil then
    redis.call('ZADD', key, score, score .. ':a1:1')
    redis.call('PEXPIRE', key, w)
    return { 1, max - 1, 0, window, 1 }
  end
  local last, index, base = match(top, '^(%d+):%l(%d+):(%d+)$')
  if not last then
    break
  end
  last = last + 0
  if last > now then
    break
  end
  local newest = index + 0
  local size = newest - base + 1
  -- c: the events in the window. A set of max or more events is first
  -- asked for its max-th newest (by rank from the end, one member): in
  -- the window, the call is denied (remaining 0) and waits until it
  -- leaves (the newest itself when max is 1, no read), writing nothing.
  -- Else, as below, c is the size less the events at or before the
  -- window's start (ZCOUNT from -inf, an integer).
  local c, since = 0, now - window
  if last > since then
    c = size
    if size >= max then
      local retry = last
      if max > 1 then
        local rank = -max
        if (redis.REDIS_VERSION_NUM or 0) < 0x070200 then
          rank = format('%d', rank)
        end
        retry = match(redis.call('ZRANGE', key, rank, rank)[1] or '', '^%d+')
        if retry == nil then
          return redis.error_reply('ERR ratelua: KEYS[1] holds a member that is not a zset_log event')
        end
        retry = retry + 0
      end
      if retry > since then
        return { 0, 0, retry + window - now, last + window - now, 1 }
      end
    end
    if size > 1 then
      if (redis.REDIS_VERSION_NUM or 0) < 0x070200 then
        since = format('%d', since)
      end
      c = size - redis.call('ZCOUNT', key, '-inf', since)
    end
  end
  -- Allowed (c < max): drop the oldest events by rank once at least half
  -- of the set is out of the max newest in the window, add this one, and
  -- set the TTL to the window (reset_after).
  local keep = max
  if c < keep then
    keep = c
  end
  local removable = size - keep
  if removable > 0 and removable >= keep then
    redis.call('ZREMRANGEBYRANK', key, '0', format('%d', removable - 1))
    base = format('%d', newest - keep + 1)
  end
  local member
  index = newest + 1
  -- #expand event_name(member, score, index, base)
  redis.call('ZADD', key, score, member)
  redis.call('PEXPIRE', key, w)
  return { 1, max - c - 1, 0, window, 1 }
until true
-- (tonumber as a local after the common call, which does not use it: a
-- global read is a table lookup.)
local tonumber = tonumber
-- One limit (n == 1), the common case: now and the limit's two integers
-- are checked canonical at once, in one find of their text joined by
-- spaces (a find costs about 1k instructions, more than the joining), into
-- max1 and window1.
local n, max1, window1 = (#ARGV - 4) / 2, nil, nil
local count, now = 1, false
-- ARGV[i] read once each (a field read costs about 100 instructions).
local text, limit1, limit2 = ARGV[3], ARGV[5], ARGV[6]
if ARGV[1] ~= '1' then
  -- #expand integer(count, ARGV[1], -MAX_TIME, MAX_TIME)
end
if text ~= '' then
  -- Canonical: '0', or a digit 1-9 then digits (what '%d' writes), which
  -- text + 0 reads without a call (a find and no string made: cheaper
  -- than comparing with format('%d', ...)).
  now = nil
  if text == '0' then
    now = 0
  elseif n == 1 and find(text .. ' ' .. limit1 .. ' ' .. limit2, '^[1-9]%d* [1-9]%d* [1-9]%d*$') then
    now, max1, window1 = text + 0, limit1 + 0, limit2 + 0
    if now > MAX_TIME then
      now = nil
    end
  elseif text and find(text, '^[1-9]%d*$') then
    now = text + 0
    if now > MAX_TIME then
      now = nil
    end
  end
end
-- A reservation's mode (v7): parsed only when the mode is not '0' or '1'.
-- A reserve decides as mode '0'; least is the smallest ARGV[1] it takes.
local mode, op, id, lifetime, least = ARGV[4], nil, 0, 0, 0
if mode ~= '0' and mode ~= '1' then
  -- #expand reservation(op, id, lifetime, mode)
  if op then
    mode = '0'
    if op == 'reserve' then
      least = 1
    end
  end
end
local unit = ARGV[2]
if count == nil or now == nil or #KEYS ~= 1 or (unit ~= 'ms' and unit ~= 's' and unit ~= 'us')
  or (mode ~= '0' and mode ~= '1') or (n ~= 1 and (n < 1 or n > MAX_LIMITS or n % 1 ~= 0))
  or (op and count < least) then
  -- #expand rare(helpers)
  -- #expand reservation_refuse(helpers, op, count, now)
  local args = ARGV
  if op then
    -- The mode is right: refuse names the wrong argument after it.
    args = { unpack(ARGV) }
    args[4] = '0'
  end
  return helpers.refuse(KEYS, args, 2)
end
local key = KEYS[1]

-- One limit, the common case, with locals only: the limit is checked
-- inline (its '%d' text must be ARGV's), and the window is counted from
-- the newest event, which tells the set's size (its index minus its base,
-- plus 1), and the events at or before the window's start (ZCOUNT from
-- -inf, an integer, which stops at the first event inside the window): the
-- count is the size minus those. Bad limits and resets go on to the
-- general code, which refuses or resets.
local server = not now
if n == 1 and count >= 0 and not op then
  local max, window = 0, 0
  if max1 then
    max, window = max1, window1
  elseif find(limit1, '^[1-9]%d*$') and find(limit2, '^[1-9]%d*$') then
    max, window = limit1 + 0, limit2 + 0
  end
  if max >= 1 and max <= 10000 and window >= 1 and window <= MAX_TIME then
    if got_now then
      now = got_now
    elseif server then
      -- #expand server_now(now, unit)
      got_now = now
    end
    -- first_index: the base of the newest event, as text.
    local last, newest, size, first_index = nil, 0, 0, nil
    local top = got_top or redis.pcall('ZRANGE', key, '-1', '-1')
    got_top = top
    -- wrong_type without its type(): ZRANGE replies a table, or an error
    -- (a table with err).
    if top.err then
      return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than zset_log'
        .. ' state (another script\'s state?): ' .. top.err)
    end
    top = top[1]
    local time, index
    if top then
      time, index, first_index = match(top, '^(%d+):%l(%d+):(%d+)$')
    end
    -- v7: a tagged event or a reservation's record on top (a key holding
    -- reservations, or another sorted set): the general code decides.
    if top == nil or time then
      if top then
        -- (text + 0 is the number of a digit string without a call)
        last, newest = time + 0, index + 0
        size = newest - first_index + 1
        if last > now + window then
          local gone
          -- #expand stale(gone, last, now, window, server, unit)
          if gone then
            redis.call('DEL', key)
            last, newest, size, first_index, top = nil, 0, 0, nil, nil
          end
        end
      end
      local stamp = now
      if last and last > now then
        stamp = last
      end
      local asked = count
      if asked < 1 then
        asked = 1
      end
      -- c: the events in the window. When the set is too small for a denial,
      -- ZCOUNT counts the events out of the window (an integer); else the
      -- oldest event in the window is read (first, its name): indexes are
      -- consecutive, so c is the newest index minus its index plus 1, and it
      -- is the retry event of a denied call at saturation (mode 0,
      -- eventCount 1).
      local c, first, first_time = 0, nil, nil
      if size > 0 and last > stamp - window then
        c = size
        if size + asked <= max then
          if size > 1 then
            -- On a server that turns a number argument of redis.call
            -- into text by ll2string (Valkey 8, Redis 7.2 and later), an
            -- integer under 2^53 is passed as a number: the same text as
            -- format('%d'), and cheaper. Redis 7.0 writes it by
            -- snprintf('%.17g'), exact but dearer than format: there (and
            -- where REDIS_VERSION_NUM is not set, an emulator) the script
            -- makes the text.
            local since = stamp - window
            if (redis.REDIS_VERSION_NUM or 0) < 0x070200 then
              since = format('%d', since)
            end
            c = size - redis.call('ZCOUNT', key, '-inf', since)
          end
        elseif size > 1 then
          -- The times are integers: after stamp - window is from stamp -
          -- window + 1 (a number where the server writes it by ll2string,
          -- as above).
          local after = stamp - window + 1
          if (redis.REDIS_VERSION_NUM or 0) < 0x070200 then
            after = format('%d', after)
          end
          first = redis.call('ZRANGE', key, after, '+inf', 'BYSCORE', 'LIMIT', '0', '1')[1]
          local index
          first_time, index = match(first, '^(%d+):%l(%d+):')
          if index == nil then
            return redis.error_reply('ERR ratelua: KEYS[1] holds a member that is not a zset_log event')
          end
          c = newest - index + 1
        else
          first = top
        end
      end
      local allowed = c + asked <= max
      local record = count > 0 and (allowed or mode == '1')
      local added = 0
      local previous = last -- the newest event's time before this call
      if record then
        -- More than max + 1 events at once are recorded as max + 1: no reply
        -- can tell them apart.
        added = count
        if added > max + 1 then
          added = max + 1
        end
        local keep = max + 1 - added
        if c < keep then
          keep = c
        end
        local removable = size - keep
        local base = newest - size + 1
        if removable > 0 and removable >= keep then
          redis.call('ZREMRANGEBYRANK', key, '0', format('%d', removable - 1))
          size = keep
          -- The base moves by the events dropped (else it is first_index).
          base = newest - size + 1
          first_index = format('%d', base)
        elseif first_index == nil then
          first_index = '1' -- a fresh key's (newest and size 0)
        end
        local score = text
        if stamp ~= now or score == '' then
          score = format('%d', stamp)
        end
        -- Member names: the index after a letter for its number of digits
        -- (a: 1 digit, b: 2, ...), then the base (the macro event_name).
        local index = newest + 1
        if added == 1 then
          local member
          -- #expand event_name(member, score, index, first_index)
          redis.call('ZADD', key, score, member)
        else
          local letter, ten = 97, 10
          while index >= ten do
            letter, ten = letter + 1, ten * 10
          end
          local batch = {}
          local b = 0
          for j = index, newest + added do
            if j >= ten then
              letter, ten = letter + 1, ten * 10
            end
            batch[b + 1], batch[b + 2] = score, format('%s:%c%d:%d', score, letter, j, base)
            b = b + 2
            if b == 2000 or j == newest + added then
              redis.call('ZADD', key, unpack(batch, 1, b))
              b = 0
            end
          end
        end
        newest, last = newest + added, stamp
        c = c + added
      end
      local left = max - c
      if left < 0 then
        left = 0
      end
      local reset_after = 0
      if c > 0 then
        reset_after = last + window - now
        if reset_after > MAX_TIME then
          reset_after = MAX_TIME
        elseif reset_after < 0 then
          reset_after = 0
        end
      end
      if record then
        -- In unit ms the TTL is the text of ARGV[6] when it is the window
        -- (reset_after >= 1 here).
        local ttl = limit2
        if unit ~= 'ms' or reset_after ~= window then
          -- #expand ttl_ms(ttl, unit, reset_after)
        end
        redis.call('PEXPIRE', key, ttl)
      end
      if allowed then
        return { 1, left, 0, reset_after, 1 }
      end
      if asked > max then
        return { 0, left, -1, reset_after, 1 }
      end
      -- Wait until the (max - asked + 1)-th newest event leaves the window:
      -- one of this call's, the newest before it, the oldest in the window
      -- if it was read, or another one (read by rank).
      local rank = max - asked
      local time
      if rank < added then
        time = stamp
      elseif rank == added then
        time = previous
      elseif rank == c - 1 and first then
        if first_time == nil then
          first_time = match(first, '^%d+')
        end
        time = first_time + 0
      else
        local r = format('%d', rank)
        time = match(redis.call('ZRANGE', key, r, r, 'REV')[1], '^%d+') + 0
      end
      local retry = time + window - now
      if retry > MAX_TIME then
        retry = MAX_TIME
      elseif retry < 0 then
        retry = 0
      end
      return { 0, left, retry, reset_after, 1 }
    end
  end
end

-- The general code: several limits, a reset, or a bad limit to refuse;
-- and (v7) a reserve or a settle, or a key holding reservations.

-- member reads a member's time, index and base, and whether it is tagged
-- (v7: '<time>:<index>:<base>:<tag>'); nil if it is not a zset_log event
-- (v4 names its members as v3 does).
local function member(name)
  local time, index, base = string.match(name, '^(%d+):%l(%d+):(%d+)$')
  if time == nil then
    time, index, base = string.match(name, '^(%d+):%l(%d+):(%d+):%d+$')
    if time == nil then
      return nil
    end
    return time + 0, index + 0, base + 0, true
  end
  return time + 0, index + 0, base + 0, false
end

-- name is the member of event `index` at time `score` (text), whose base
-- is `base`, tagged with `tag` (v7: a reservation's id, or 0) unless nil.
local function name(score, index, base, tag)
  local letter = 'a'
  if index >= 10 then
    local digits, ten = 2, 100
    while index >= ten do
      digits, ten = digits + 1, ten * 10
    end
    letter = string.char(96 + digits)
  end
  if tag then
    return string.format('%s:%s%d:%d:%d', score, letter, index, base, tag)
  end
  return string.format('%s:%s%d:%d', score, letter, index, base)
end

-- The limits: largest is the largest max, wide the index of the (first)
-- widest window.
-- bad: the first bad limit argument, its field and range (in words).
local largest, wide, widest = 0, 1, 0
local bad, field, range
for i = 5, 3 + 2 * n, 2 do
  -- Canonical integers of 1 or more, found by one find of the limit's two
  -- joined by a space and read by arithmetic (issue 35: the integer macro
  -- makes a find per integer, about 1.4k each); when it fails, max alone
  -- tells which of the two to name.
  local max, window = nil, nil
  if find(ARGV[i] .. ' ' .. ARGV[i + 1], '^[1-9]%d* [1-9]%d*$') then
    max, window = ARGV[i] + 0, ARGV[i + 1] + 0
  elseif find(ARGV[i], '^[1-9]%d*$') then
    max = ARGV[i] + 0
  end
  if max == nil or max > 10000 then
    bad, field, range = i, 'max', '[1, 10^4]'
    break
  elseif window == nil or window > MAX_TIME then
    bad, field, range = i + 1, 'window', '[1, 2^52]'
    break
  end
  if max > largest then
    largest = max
  end
  if window > widest then
    wide, widest = (i - 3) / 2, window
  end
end
if bad or count < 0 then
  -- #expand rare(helpers)
  if bad then
    return helpers.refuse(KEYS, ARGV, 2, bad, field, range)
  end
  return helpers.fresh(KEYS, ARGV, 2)
end
if got_now then
  now = got_now
elseif server then
  -- #expand server_now(now, unit)
end

-- The newest event: its time (newest_time), and the indexes in the set.
-- v7: a key holding reservations (slow) holds, below every event (scores
-- < 0), member '@' scored <last write> - 2^53, and per reservation id
-- 'r<id>:<expiry>:<estimate>' while it is held (live, or expired and not
-- yet converted), scored -id: a settled or converted reservation is
-- forgotten, its record removed (a record 's<id>:<expiry>', which no
-- release writes, reads as none held); its events are tagged ('<time>:<index>:<base>:0'), so that
-- v6, which reads the newest member only, refuses it. last: the last
-- write's time.
local last, newest, base, slow = nil, 0, 1, false
local top = got_top or redis.pcall('ZRANGE', key, '-1', '-1')
-- #expand wrong_type(top, 'zset_log')
top = top[1]
if top then
  last, newest, base, slow = member(top)
  if last == nil then
    if not find(top, '^[rs@]') then
      return redis.error_reply('ERR ratelua: KEYS[1] holds a member that is not a zset_log event')
    end
    -- Records only: no event.
    newest, base, slow = 0, 1, true
  end
end
local newest_time = last
if slow then
  local written = redis.call('ZSCORE', key, '@')
  if written then
    written = written + 9007199254740992
    if last == nil or written > last then
      last = written
    end
  end
end
if last and last > now + widest then
  local gone
  -- #expand stale(gone, last, now, widest, server, unit)
  if gone then
    redis.call('DEL', key)
    last, newest_time, newest, base, slow, top = nil, nil, 0, 1, false, nil
  end
end
-- size: the events in the set; records: the members below them.
-- v7: hold is the sum of the estimates of the reservations held (live,
-- or expired and not yet converted), which every window counts; holds
-- lists them ({expiry, estimate, record, id}). held is the record of the
-- id a reserve or settle names, estimate its estimate while it is live.
local size, records, lo = newest - base + 1, 0, '-inf'
local hold, holds = 0, {}
local held, estimate = nil, nil
if slow then
  local below = redis.call('ZRANGE', key, '-inf', '(0', 'BYSCORE')
  records, lo = #below, '0'
  size = redis.call('ZCARD', key) - records
  for _, m in ipairs(below) do
    local kind, rid, expiry, units = match(m, '^([rs])(%d+):(%d+):?(%d*)$')
    if kind then
      rid, expiry = rid + 0, expiry + 0
      if op and rid == id then
        held = m
      end
      if kind == 'r' then
        units = units + 0
        hold = hold + units
        holds[#holds + 1] = { expiry, units, m, rid }
        if op and rid == id and expiry > now then
          estimate = units
        end
      end
    end
  end
end
local stamp = now
if last and last > now then
  stamp = last
end

-- v7: a call that may write (eventCount > 0, or a settle of a live id)
-- first converts the reservations it finds expired: each is settled with
-- its estimate, at its expiry (the last write's time if later), in the
-- order of their expiries. Units beyond the newest largest + 1 are not
-- recorded: no reply can tell them apart.
local converted = false
if #holds > 0 and ((op ~= 'settle' and count > 0) or (op == 'settle' and estimate)) then
  local due, live = {}, {}
  for _, h in ipairs(holds) do
    if h[1] <= now then
      due[#due + 1] = h
    else
      live[#live + 1] = h
    end
  end
  if #due > 0 then
    table.sort(due, function(a, b)
      return a[1] < b[1] or (a[1] == b[1] and a[4] < b[4])
    end)
    local budget = largest + 1
    for j = #due, 1, -1 do
      local units = due[j][2]
      if units > budget then
        units = budget
      end
      due[j][5], budget = units, budget - units
    end
    base = newest - size + 1
    local gone = {}
    for _, h in ipairs(due) do
      hold = hold - h[2]
      local at = h[1]
      if last and last > at then
        at = last
      end
      local score = format('%d', at)
      local batch, b = {}, 0
      for j = 1, h[5] do
        batch[b + 1], batch[b + 2] = score, name(score, newest + j, base, 0)
        b = b + 2
        if b == 2000 or j == h[5] then
          redis.call('ZADD', key, unpack(batch, 1, b))
          b = 0
        end
      end
      if h[5] > 0 then
        newest, size, newest_time = newest + h[5], size + h[5], at
      end
      -- Forgotten once converted, as once settled (below).
      gone[#gone + 1] = h[3]
      if op and h[4] == id then
        held = nil
      end
    end
    redis.call('ZREM', key, unpack(gone))
    records = records - #gone
    holds, converted = live, true
  end
end

-- Count each window and decide. A window the newest event is not in holds
-- none; a set of one event holds it in every window the newest is in.
-- events[i]: the events in limit i's window; counts[i]: those and hold.
local asked = count
if asked < 1 then
  asked = 1
end
local events, counts = {}, {}
local allowed = true
for i = 1, n do
  local max, window = ARGV[2 * i + 3] + 0, ARGV[2 * i + 4] + 0
  local c = 0
  if size > 0 and newest_time > stamp - window then
    if size == 1 then
      c = 1
    else
      c = size - redis.call('ZCOUNT', key, lo, format('%d', stamp - window))
    end
  end
  events[i], counts[i] = c, c + hold
  if c + hold + asked > max then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')
local added = 0
local previous = newest_time -- the newest event's time before this call's

local tag, write = nil, record or converted
if op or slow then
  tag = 0
end
if op == 'reserve' then
  if estimate then
    -- Held already (a reserve retried): nothing recorded, the reply of an
    -- admission, read as a peek.
    record, count, asked, allowed, write = false, 0, 1, true, converted
  elseif record then
    -- Held: its record, and no event until it is settled; every window
    -- counts its estimate.
    record, write = false, 'reserve'
    if held == nil and records > MAX_RESERVATIONS then
      -- #expand prune(records)
    end
    hold = hold + count
    holds[#holds + 1] = { now + lifetime, count }
    for i = 1, n do
      counts[i] = counts[i] + count
    end
  end
elseif op == 'settle' then
  record, write = false, 'none'
  if estimate then
    -- The units used count from the settle: actual events at stamp
    -- (never denied), and the id forgotten (its record removed).
    hold = hold - estimate
    for j, h in ipairs(holds) do
      if h[4] == id then
        table.remove(holds, j)
        break
      end
    end
    for i = 1, n do
      counts[i] = counts[i] - estimate
    end
    record, write = count > 0, 'settle'
  end
end

if record then
  -- More than largest + 1 events at once are recorded as largest + 1: no
  -- reply can tell them apart.
  added = count
  if added > largest + 1 then
    added = largest + 1
  end
  local keep = largest + 1 - added
  if events[wide] < keep then
    keep = events[wide]
  end
  local removable = size - keep
  if removable > 0 and removable >= keep then
    redis.call('ZREMRANGEBYRANK', key, format('%d', records), format('%d', records + removable - 1))
    size = keep
  end
  base = newest - size + 1
  local score = format('%d', stamp)
  if added == 1 then
    redis.call('ZADD', key, score, name(score, newest + 1, base, tag))
  else
    local batch = {}
    for first = 1, added, 1000 do
      local b = 0
      for j = first, math.min(first + 999, added) do
        batch[b + 1], batch[b + 2] = score, name(score, newest + j, base, tag)
        b = b + 2
      end
      redis.call('ZADD', key, unpack(batch, 1, b))
    end
  end
  newest, size, newest_time = newest + added, size + added, stamp
  for i = 1, n do
    counts[i] = counts[i] + added
  end
end
if write == 'settle' then
  -- The reply is a peek's after the settle.
  count, asked, allowed = 0, 1, true
  for i = 1, n do
    if counts[i] + 1 > ARGV[2 * i + 3] + 0 then
      allowed = false
    end
  end
end

-- v7: the reservations held are the newest, each at the time its units
-- count until if it is never settled (its expiry, or stamp if later):
-- reset_after counts from the latest, and a retry waits for them (the
-- newest first) before the events.
local held_until = nil
if hold > 0 then
  for _, h in ipairs(holds) do
    h[6] = h[1]
    if stamp > h[1] then
      h[6] = stamp
    end
    if held_until == nil or h[6] > held_until then
      held_until = h[6]
    end
  end
  table.sort(holds, function(a, b)
    return a[6] > b[6]
  end)
end

-- Reply from the state after this call: when allowed, the limit with the
-- fewest remaining decides; when denied, the one with the longest retry
-- (never first); ties go to the lower index.
local remaining, retry, reset_after, index = nil, 0, 0, 1
local fetched, fetched_time = -1, nil -- the last event read by rank, and its time
for i = 1, n do
  local max, window, c = ARGV[2 * i + 3] + 0, ARGV[2 * i + 4] + 0, counts[i]
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
    local since = held_until or newest_time
    local reset = math.max(0, math.min(MAX_TIME, since + window - now))
    if reset > reset_after then
      reset_after = reset
    end
  end
  if not allowed and retry ~= -1 then
    if asked > max then
      retry, index = -1, i
    elseif c + asked > max then
      -- Wait until the (max - asked + 1)-th newest unit leaves the window:
      -- a reservation's, one of this call's events, the newest before
      -- them, or an older one.
      local rank = max - asked
      local time
      if rank < hold then
        local need = rank + 1
        for _, h in ipairs(holds) do
          need = need - h[2]
          if need <= 0 then
            time = h[6]
            break
          end
        end
      else
        rank = rank - hold
        if rank < added then
          time = stamp
        elseif rank == added and previous then
          time = previous
        elseif rank == fetched then
          time = fetched_time
        else
          local r = format('%d', rank)
          time = tonumber(match(redis.call('ZRANGE', key, r, r, 'REV')[1], '^(%d+):'))
          fetched, fetched_time = rank, time
        end
      end
      local wait = math.max(0, math.min(MAX_TIME, time + window - now))
      if wait > retry then
        retry, index = wait, i
      end
    end
  end
end
if write == 'none' then
  return { 0, remaining, -1, reset_after, 0 }
end
if write then
  local ttl = reset_after
  if write == 'reserve' and lifetime > ttl then
    ttl = lifetime
  end
  -- #expand ttl_ms(ttl, unit, ttl)
  if tag then
    -- A key holding reservations: its last write '@', the reservation's
    -- record, and a TTL that never shortens (PEXPIRE GT; a key that held
    -- none before takes its TTL as it is).
    local at = format('%d', stamp - 9007199254740992)
    if write == 'reserve' then
      if held then
        redis.call('ZREM', key, held)
      elseif not slow and top then
        -- The newest event of a key that held no reservation is tagged,
        -- so that v6 (and v7's one-limit path, which reads the newest
        -- member only) never takes the key for one without reservations.
        redis.call('ZREM', key, top)
        redis.call('ZADD', key, format('%d', newest_time), top .. ':0')
      end
      redis.call('ZADD', key, 'GT', at, '@', format('%d', -id), format('r%d:%d:%d', id, now + lifetime, count))
    elseif write == 'settle' then
      -- The id is forgotten: a settle of it again, as of any unknown
      -- id, applies nothing, and a reserve of it is a new reservation,
      -- as it was for a settled one. No record is left to read, so the
      -- records of a key are its live reservations (and those expired
      -- and not yet converted): a key settling many reservations reads
      -- as few records as it holds.
      redis.call('ZREM', key, held)
      redis.call('ZADD', key, 'GT', at, '@')
    else
      redis.call('ZADD', key, 'GT', at, '@')
    end
    if slow then
      redis.call('PEXPIRE', key, ttl, 'GT')
    else
      redis.call('PEXPIRE', key, ttl)
    end
  else
    redis.call('PEXPIRE', key, ttl)
  end
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
