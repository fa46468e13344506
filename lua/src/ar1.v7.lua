-- ratelua ar1 v7: exponentially decaying counts (AR(1)), several limits in
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
-- Every integer is canonical decimal text: '0', or an optional '-' then a
-- digit 1-9 then digits ('-0', '+1', '007', ' 1', '1e3' are refused). Bad
-- input is an error reply 'ERR ratelua: ...' naming the argument, and
-- writes nothing.
--
-- Each limit keeps a count c. At every boundary of its resolution (t
-- crossing a multiple of resolution) c is divided by decay/1000; a count
-- below 1/1000 of an event is 0. Events are allowed when
-- c + eventCount <= max for every limit. Powers are computed by repeated
-- squaring; a boundary is estimated with a logarithm and then decided by an
-- exact check of that same arithmetic. Fresh means every count is 0;
-- reset_after is the time until then. remaining is floor(max - c). The
-- executable specification is internal/model/ar1.go; for limits that do
-- not change on a key, v6 replies as v5 does to every call.
--
-- State with one limit (the common case): the boundary index of the last
-- write, b = floor(time / resolution), and the count there: one integer
-- b * 2^20 + count when the count is whole and below 2^20 and b < 2^33
-- (the server keeps it in 16 bytes, as a counter), else a string
-- "<b>:<count>", the count written as %.17g (by %d when whole). The
-- decay only depends on boundaries, so the index is all the time that
-- is kept. The limits and the unit are not stored: every call checks the
-- limits. A call with another unit but the same resolution as a duration
-- (1000 in ms, 1 in s) reads the same state. A call with another
-- resolution reads the index as its own: the Go API never does (its key
-- names the limits); a raw caller changing a key's resolution should reset
-- it first (eventCount < 0): with a shorter resolution the count is
-- decayed over more boundaries than passed, with a longer one the stored
-- index lies ahead of now, so the count does not decay before then and
-- the waits replied count from there (as for a clock behind, below). A
-- call with other max or decay carries the count over, decayed with the
-- new decay and compared with the new max. A call with another number of
-- limits starts fresh (the layouts differ).
--
-- State with two or more limits: v4's and v5's, a string "<limits>|<time>
-- <c_1> ... <c_n>" where <limits> is ARGV[2] and ARGV[5..] joined by
-- spaces, exactly as the call that wrote it sent them (a call with other
-- limits or another unit starts fresh; a call with the same ones need not
-- check them again), time is the last write in the unit and the counts are
-- written as %.17g.
--
-- TTL: reset_after. A now earlier than the last write is treated as the
-- time of the last write (with one limit: a now whose boundary is before
-- the last write's is treated as at that boundary; the replies are the
-- same). The key must be written by this script only.
--
-- What v6 does apart from v5: one limit's state is the boundary index and
-- the count, most often one integer (a value as small as a counter's),
-- without the unit suffix; a call builds no function (the prelude's
-- helpers and decayed, boundaries and the limits check are macros
-- expanded in place). Replies are v5's for limits that do not change on a
-- key. v5's and v6's states do not mix (state version 6): the Go API's
-- keys differ, and either script reads the other's one-limit state as
-- absent (v6's has no space, v5's has one).

-- What v7 does apart from v6 (issue 35; v7 is in development, it reads
-- and writes v6's state and replies as v6): one limit's call checks now and
-- its three integers canonical in one find of their text joined by spaces
-- (v6: a tonumber and a format for now, three finds), holds KEYS, ARGV and
-- redis in locals (a global is a table lookup on every use), and finds the
-- boundaries of reset_after and retry_after from the logarithm's estimate
-- alone when that lies more than 10^-4 from a whole number (macro
-- estimate; v6 checked every estimate with powers by repeated squaring):
-- about 7k instructions less per call (of 60k). Then (issue 35 again)
-- each global, field and ARGV[i] is read once at most on the one-limit
-- path (a lookup costs about 100 instructions), the GET reply's error is
-- told where the state is not a number (no call of type() on every
-- call), log(factor) is taken once per call, and estimate settles k = 1
-- too (a denial one boundary from room, a hammered key's, ran
-- boundaries' exact search): about 1k less per call, 4.5k less per such
-- denial. What is left is mostly the commands and the arguments' check
-- and conversion (the bench's minimum row 'integers checked and
-- converted' is that alone).
-- #include _prelude.v7.lua

local EPSILON = 0.001
-- ONE_INTEGER is 2^20: a one-limit state '<boundary> * 2^20 + <count>' is
-- one integer below 2^53 (boundary < 2^33, a whole count < 2^20).
local ONE_INTEGER = 1048576

-- decayed sets OUT to COUNT after K >= 0 boundaries at FACTOR: COUNT
-- divided by FACTOR^K (the power by repeated squaring), 0 below EPSILON.
-- #define decayed(OUT, COUNT, FACTOR, K)
do
  local decay_power, decay_base, decay_k = 1, FACTOR, K
  while decay_k > 0 do
    if decay_k % 2 == 1 then
      decay_power = decay_power * decay_base
      decay_k = decay_k - 1
    end
    decay_base = decay_base * decay_base
    decay_k = decay_k / 2
  end
  OUT = COUNT / decay_power
  if OUT < EPSILON then
    OUT = 0
  end
end
-- #end

-- boundaries sets OUT to the fewest k >= 1 boundaries after which COUNT
-- decayed k times at FACTOR, plus ASKED, is at most MAX (COUNT > 0, ASKED
-- <= MAX): estimated with a logarithm, then decided by the exact check of
-- decayed's arithmetic (written out twice below: macros do not nest).
-- #define boundaries(OUT, COUNT, FACTOR, ASKED, MAX)
do
  local bound_room = MAX - ASKED
  if bound_room < EPSILON then
    bound_room = EPSILON
  end
  local bound_k = 1
  if COUNT > bound_room then
    -- ceil, without a call (math.ceil's result for any finite value).
    local bound_ratio = log(COUNT / bound_room) / log(FACTOR)
    bound_k = bound_ratio - bound_ratio % 1
    if bound_k < bound_ratio then
      bound_k = bound_k + 1
    end
    if bound_k < 1 then
      bound_k = 1
    end
  end
  -- Most often the estimate is the answer: check k and k - 1 in one pass
  -- (the products of two passes: the bases are shared), else search.
  local bound_j, bound_i, bound_pk, bound_pi, bound_base = bound_k, bound_k - 1, 1, 1, FACTOR
  while bound_j > 0 do
    if bound_j % 2 == 1 then
      bound_pk = bound_pk * bound_base
      bound_j = bound_j - 1
    end
    if bound_i % 2 == 1 then
      bound_pi = bound_pi * bound_base
      bound_i = bound_i - 1
    end
    bound_base = bound_base * bound_base
    bound_j = bound_j / 2
    bound_i = bound_i / 2
  end
  local bound_at, bound_before = COUNT / bound_pk, COUNT / bound_pi
  if bound_at < EPSILON then
    bound_at = 0
  end
  if bound_before < EPSILON then
    bound_before = 0
  end
  if not (bound_at + ASKED <= MAX and (bound_k == 1 or bound_before + ASKED > MAX)) then
    while true do
      local bound_j, bound_power, bound_base = bound_k, 1, FACTOR
      while bound_j > 0 do
        if bound_j % 2 == 1 then
          bound_power = bound_power * bound_base
          bound_j = bound_j - 1
        end
        bound_base = bound_base * bound_base
        bound_j = bound_j / 2
      end
      local bound_left = COUNT / bound_power
      if bound_left < EPSILON then
        bound_left = 0
      end
      if bound_left + ASKED <= MAX then
        break
      end
      bound_k = bound_k + 1
    end
    while bound_k > 1 do
      local bound_j, bound_power, bound_base = bound_k - 1, 1, FACTOR
      while bound_j > 0 do
        if bound_j % 2 == 1 then
          bound_power = bound_power * bound_base
          bound_j = bound_j - 1
        end
        bound_base = bound_base * bound_base
        bound_j = bound_j / 2
      end
      local bound_left = COUNT / bound_power
      if bound_left < EPSILON then
        bound_left = 0
      end
      if bound_left + ASKED > MAX then
        break
      end
      bound_k = bound_k - 1
    end
  end
  OUT = bound_k
end
-- #end

-- estimate sets OUT to boundaries(OUT, COUNT, FACTOR, ASKED, MAX) without
-- its exact check when the logarithm's estimate settles it, else leaves OUT
-- nil (boundaries decides: about one call in 5,000). With room = MAX -
-- ASKED (EPSILON when below), r = log(COUNT / room) / log(FACTOR): when
-- r > 0 lies more than 10^-4 from a whole number, ceil(r) is the answer,
-- as COUNT / FACTOR^k then lies at least FACTOR^(10^-4) - 1 >= 10^-7 of
-- room away from room (FACTOR >= 1.001) for k = ceil(r) and k - 1 (when
-- k - 1 >= 1: k is at least 1 by definition, so r below 1 gives 1; v7
-- first asked r > 1, and a denial one boundary from room, the hammered
-- key's, always took boundaries' exact search), where
-- decayed's powers err by less than 10^-9 relatively and r by less than
-- 10^-10 (any k below 2^17), and where adding ASKED errs by less than
-- 10^-15 of MAX: hence room >= MAX / 10^6 is asked too (or room below
-- EPSILON: then the check is whether the count decayed below EPSILON).
-- LOGF is log(FACTOR), computed once per call (a call of log costs about
-- 400 instructions).
-- #define estimate(OUT, COUNT, LOGF, ASKED, MAX)
do
  local estimate_room = MAX - ASKED
  if estimate_room < EPSILON then
    estimate_room = EPSILON
  end
  if estimate_room == EPSILON or estimate_room * 1000000 >= MAX then
    local estimate = log(COUNT / estimate_room) / LOGF
    local estimate_part = estimate % 1
    if estimate > 0 and estimate_part > 0.0001 and estimate_part < 0.9999 then
      OUT = estimate - estimate_part + 1
    end
  end
end
-- #end

-- limits_error sets OUT to the error reply for the first bad limit of the
-- N in ARGV (OUT stays nil when every limit is valid), with the helpers
-- HELPERS of rare().
-- #define limits_error(OUT, HELPERS, N)
for i = 5, 2 + 3 * N, 3 do
  if HELPERS.integer(ARGV[i], 1, 1000000000) == nil then
    OUT = HELPERS.refuse(KEYS, ARGV, 3, i, 'max', '[1, 10^9]')
    break
  elseif HELPERS.integer(ARGV[i + 1], 1001, 1000000000) == nil then
    OUT = HELPERS.refuse(KEYS, ARGV, 3, i + 1, 'decay', '[1001, 10^9]')
    break
  elseif HELPERS.integer(ARGV[i + 2], 1, MAX_TIME) == nil then
    OUT = HELPERS.refuse(KEYS, ARGV, 3, i + 2, 'resolution', '[1, 2^52]')
    break
  end
end
-- #end

-- horizon sets OUT to a limit's horizon for the stale rule: an event's
-- mean lifetime in the count, RESOLUTION * DECAY / (DECAY - 1000) (the
-- window the Go API gives the limit), rounded up to whole resolutions:
-- RESOLUTION * ceil(DECAY / (DECAY - 1000)), from 2 to 1001 resolutions.
-- #define horizon(OUT, DECAY, RESOLUTION)
do
  local horizon_over = DECAY - 1000
  OUT = RESOLUTION * ((DECAY + (-DECAY) % horizon_over) / horizon_over)
end
-- #end

-- #call: what follows runs on every call (in ratelua_v7, the function body)
-- KEYS, ARGV and redis as locals: a global is a table lookup on every use
-- (about 150 instructions; a local, a register).
local KEYS, ARGV, redis = KEYS, ARGV, redis
-- log is held in a local: a global and a field cost a table lookup each.
local log = math.log
-- The common call first (issue 35): one limit, count 1, mode '0', unit
-- ms, a key holding a string state or nothing, a clock not behind the
-- last write, and boundaries counted by the logarithm alone. It decides
-- as the one-limit path below, by the same arithmetic, with fewer steps (no
-- count or mode to read, no clock behind, no mode '1'). Any other call, or
-- one of these that finds anything else, leaves the block by break (a
-- jump: no test of a flag on the way out) and goes on to the general path
-- having written nothing, with the server's time (got_now) and the key's
-- GET (got) when it read them: no command is sent twice. (tonumber and
-- string.find are looked up where used: each is used once here, and a
-- local costs its lookup and a move. The block's numbers are written as
-- constants: a local holding one is a register and a load.)
local got, got_now
repeat
  if not (#ARGV == 7 and ARGV[1] == '1' and ARGV[4] == '0' and ARGV[2] == 'ms' and #KEYS == 1) then
    break
  end
  local now, m, d, r = ARGV[3], ARGV[5], ARGV[6], ARGV[7]
  if now == '' then
    if not string.find(m .. ' ' .. d .. ' ' .. r, '^[1-9]%d* [1-9]%d* [1-9]%d*$') then
      break
    end
    local time = redis.call('TIME')
    local micro = time[2] / 1000
    now = time[1] * 1000 + (micro - micro % 1)
    got_now = now
  elseif string.find(now .. ' ' .. m .. ' ' .. d .. ' ' .. r, '^[1-9]%d* [1-9]%d* [1-9]%d* [1-9]%d*$') then
    now = now + 0
    if now > 4503599627370496 then
      break
    end
  else
    break
  end
  local max, decay, resolution = m + 0, d + 0, r + 0
  if max > 1000000000 or decay < 1001 or decay > 1000000000 or resolution > 4503599627370496 then
    break
  end
  local factor = decay / 1000
  local boundary = now / resolution
  boundary = boundary - boundary % 1
  got = redis.pcall('GET', KEYS[1])
  -- c: the count at now. 0 for nothing; from a number or the text
  -- "<boundary>:<count>", decayed to now's boundary. tonumber is nil for
  -- an error table too (another type), whose err is told from a string's
  -- (nil) only when the state is not a number. The text's count must
  -- start with a digit 1-9 and hold digits and at most one point (what
  -- '%d' and '%.17g' write for a count of 1 or more below 10^17): it is
  -- then 1 or more and converted without a call; any other text (a count
  -- below 1, whose count is 0, among them) goes on. A number's count below
  -- 1 is 0, as the general path counts it.
  local c = 0
  if got then
    local last = tonumber(got)
    if last then
      c = last % 1048576
      last = (last - c) / 1048576
    elseif got.err then
      break
    else
      local index, text = string.match(got, '^(%d+):([1-9]%d*%.?%d*)$')
      if not index then
        break
      end
      last, c = index + 0, text + 0
    end
    if last > boundary then
      break
    elseif last < boundary then
      -- #expand decayed(c, c, factor, boundary - last)
    end
  end
  local logf, slot_start = log(factor), boundary * resolution
  -- reset_after's boundaries, as below (estimate(k, c, logf, 0, 0)),
  -- when the logarithm tells them.
  local reset_c = c + 1
  if reset_c > max then
    reset_c = c
  end
  local estimate = log(reset_c / EPSILON) / logf
  local part = estimate % 1
  -- (reset_c >= EPSILON, so the estimate is 0 or more but for rounding;
  -- one within 10^-4 of a whole number, 0 among them, goes on to the
  -- general path. Past this test it is above 0, so reset_after >=
  -- slot_start + resolution - now > 0, and the retry_after below too:
  -- neither is clamped at 0.)
  if part <= 0.0001 or part >= 0.9999 then
    break
  end
  local reset_after = slot_start + (estimate - part + 1) * resolution - now
  if reset_after > 4503599627370496 then
    reset_after = 4503599627370496
  end
  if reset_c > c then
    -- Allowed: the count written as below. The TTL: reset_after, at
    -- least 1 here (k >= 1 boundaries after now's; the general path's
    -- floor of 1 never applies), and the count at most max (no test for
    -- 10^15). Redis 7.0 gets the numbers as text (see the write below),
    -- by one lookup of string.format for both.
    local remaining = max - reset_c
    local value, ttl = boundary * 1048576 + reset_c, reset_after
    if reset_c % 1 ~= 0 or reset_c >= 1048576 or boundary >= 8589934592 then
      if reset_c % 1 ~= 0 then
        value = string.format('%d:%.17g', boundary, reset_c)
      else
        value = string.format('%d:%d', boundary, reset_c)
      end
      if (redis.REDIS_VERSION_NUM or 0) < 0x070200 then
        ttl = string.format('%d', ttl)
      end
    elseif (redis.REDIS_VERSION_NUM or 0) < 0x070200 then
      local format = string.format
      value, ttl = format('%d', value), format('%d', ttl)
    end
    redis.call('SET', KEYS[1], value, 'PX', ttl)
    return { 1, remaining - remaining % 1, 0, reset_after, 1 }
  end
  -- Denied (c > max - 1: no whole event left): the wait, when the
  -- logarithm tells it.
  local k
  -- #expand estimate(k, c, logf, 1, max)
  if k then
    local retry = slot_start + k * resolution - now
    if retry > 4503599627370496 then
      retry = 4503599627370496
    end
    return { 0, 0, retry, reset_after, 1 }
  end
until true
-- What the paths below use on every call is held in a local (see log).
local tonumber, find = tonumber, string.find
local unit, now, mode = ARGV[2], false, ARGV[4]
local count = 1
if ARGV[1] ~= '1' then
  -- #expand integer(count, ARGV[1], -MAX_TIME, MAX_TIME)
end
local n = (#ARGV - 4) / 3
-- One limit, the common case: now (unless '' or '0') and the limit's three
-- integers are checked canonical at once, in one find of their text joined
-- by spaces (every call pays a find per string searched, and a call's text
-- joined costs less than three more), then converted by arithmetic. Any
-- other case is checked one argument at a time below.
local max, decay, resolution
if n == 1 then
  -- (each ARGV[i] read once: a read is a table lookup)
  local text, m, d, r = ARGV[3], ARGV[5], ARGV[6], ARGV[7]
  if text == '' then
    if find(m .. ' ' .. d .. ' ' .. r, '^[1-9]%d* [1-9]%d* [1-9]%d*$') then
      max, decay, resolution = m + 0, d + 0, r + 0
    end
  elseif find(text .. ' ' .. m .. ' ' .. d .. ' ' .. r, '^[1-9]%d* [1-9]%d* [1-9]%d* [1-9]%d*$') then
    now, max, decay, resolution = text + 0, m + 0, d + 0, r + 0
    if now > MAX_TIME then
      now = nil
    end
  end
end
if now == false and ARGV[3] ~= '' then
  -- Canonical: what '%d' writes back (in range, a number's '%d' text is
  -- interned already when it is ARGV[3], so the compare is cheap).
  now = tonumber(ARGV[3])
  if not (now and now >= 0 and now <= MAX_TIME and string.format('%d', now) == ARGV[3]) then
    now = nil
  end
end
if count == nil or now == nil or #KEYS ~= 1 or (unit ~= 'ms' and unit ~= 's' and unit ~= 'us')
  or (mode ~= '0' and mode ~= '1') or (n ~= 1 and (n < 1 or n > MAX_LIMITS or n % 1 ~= 0)) then
  -- #expand rare(helpers)
  -- #expand no_reservation('ar1', 'its state keeps one decayed count per limit and no record of the events in it', count, now)
  return helpers.refuse(KEYS, ARGV, 3)
end
local key = KEYS[1]
if count < 0 then
  -- #expand rare(helpers)
  local bad
  -- #expand limits_error(bad, helpers, n)
  return bad or helpers.fresh(KEYS, ARGV, 3)
end

if n == 1 then
  -- One limit: the state is the boundary index of the last write and the
  -- count there, one integer when it fits. The limits are checked on
  -- every call.
  -- Canonical: digits without a leading zero (a find makes no string),
  -- then in range (the text converted by arithmetic, not by a call).
  if max == nil then
    -- (not checked above: now is '0')
    max, decay, resolution = ARGV[5], ARGV[6], ARGV[7]
    if find(max, '^[1-9]%d*$') and find(decay, '^[1-9]%d*$') and find(resolution, '^[1-9]%d*$') then
      max, decay, resolution = max + 0, decay + 0, resolution + 0
    else
      max = nil
    end
  end
  if not (max and max <= 1000000000 and decay >= 1001 and decay <= 1000000000 and resolution <= MAX_TIME) then
    -- #expand rare(helpers)
    local bad
    -- #expand limits_error(bad, helpers, 1)
    return bad
  end
  -- (An error reply, a key of another type, is told below, where the
  -- state is not a number: wrong_type without a call of type() on every
  -- call. Nothing is written before.)
  local state = got
  if got == nil then
    state = redis.pcall('GET', key)
  end
  local server = not now
  if got_now then
    now = got_now
  elseif server then
    -- The server's TIME in the unit (server_now, its strings converted
    -- by arithmetic).
    local time = redis.call('TIME')
    if unit == 'ms' then
      local micro = time[2] / 1000
      now = time[1] * 1000 + (micro - micro % 1)
    elseif unit == 's' then
      now = time[1] + 0
    else
      now = time[1] * 1000000 + time[2]
    end
  end
  local factor = decay / 1000
  -- boundary: the index of the resolution boundary at or before now, or
  -- the last write's when that is later (a clock behind). x - x % 1 is
  -- floor(x), exactly, without a call.
  local boundary, c = now / resolution, 0
  boundary = boundary - boundary % 1
  if state then
    local last, stored = tonumber(state), nil
    if last then
      stored = last % ONE_INTEGER
      last = (last - stored) / ONE_INTEGER
    else
      -- wrong_type: the reply is a string or an error table (tonumber
      -- of a table is nil).
      if type(state) == 'table' and state.err then
        return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than ar1'
          .. ' state (another script\'s state?): ' .. state.err)
      end
      local index, text = string.match(state, '^(%d+):([^:]+)$')
      if index then
        last, stored = tonumber(index), tonumber(text)
      end
    end
    -- A stored count is at least 1 (a write adds at least one event).
    if stored and stored >= 1 then
      c = stored
      if last > boundary then
        -- A clock behind the last write's boundary (rarely). The state is
        -- stale when that boundary's start lies more than the limit's
        -- horizon ahead of now (and, for a caller's clock, of the
        -- server's TIME): written by a clock far ahead, it is deleted
        -- and the call counts from 0.
        local horizon, gone
        -- #expand horizon(horizon, decay, resolution)
        -- #expand stale(gone, last * resolution, now, horizon, server, unit)
        if gone then
          redis.call('DEL', key)
          c = 0
        else
          boundary = last
        end
      elseif last < boundary then
        -- #expand decayed(c, stored, factor, boundary - last)
      end
    end
  end
  local asked = count
  if asked < 1 then
    asked = 1
  end
  local allowed = c + asked <= max
  local record = count > 0 and (allowed or mode == '1')
  if record then
    c = c + count
  end
  local slot_start = boundary * resolution
  local remaining, reset_after = max - c, 0
  remaining = remaining - remaining % 1
  if remaining < 0 then
    remaining = 0
  end
  local logf = log(factor)
  if c > 0 then
    -- estimate(k, c, logf, 0, 0) with its room, EPSILON, written in.
    local estimate = log(c / EPSILON) / logf
    local part = estimate % 1
    local k
    if estimate > 0 and part > 0.0001 and part < 0.9999 then
      k = estimate - part + 1
    else
      -- #expand boundaries(k, c, factor, 0, 0)
    end
    reset_after = slot_start + k * resolution - now
    if reset_after > MAX_TIME then
      reset_after = MAX_TIME
    elseif reset_after < 0 then
      reset_after = 0
    end
  end
  if record then
    local ttl = reset_after
    -- On a server that turns a number argument of redis.call into text by
    -- ll2string (Valkey 8, Redis 7.2 and later), an integer under 2^53 is
    -- passed as a number: the same text as format('%d'), and cheaper than
    -- a string made by the script. Redis 7.0 writes it by
    -- snprintf('%.17g'), also exact, but dearer than format: there (and
    -- where REDIS_VERSION_NUM is not set, an emulator) the script makes
    -- the text.
    local numbers = (redis.REDIS_VERSION_NUM or 0) >= 0x070200
    if unit ~= 'ms' then
      -- #expand ttl_ms(ttl, unit, reset_after)
    elseif ttl < 1 then
      ttl = 1
    elseif not numbers then
      ttl = string.format('%d', ttl)
    end
    -- One integer (the server keeps it in 16 bytes, like a counter) when
    -- the count is whole and below 2^20 and the boundary below 2^33; else
    -- '<boundary>:<count>', a whole count by '%d' (the same text as
    -- '%.17g' below 10^15, and much cheaper).
    local value
    if c % 1 ~= 0 or c >= 1000000000000000 then
      value = string.format('%d:%.17g', boundary, c)
    elseif c < ONE_INTEGER and boundary < 8589934592 then
      value = boundary * ONE_INTEGER + c
      if not numbers then
        value = string.format('%d', value)
      end
    else
      value = string.format('%d:%d', boundary, c)
    end
    redis.call('SET', key, value, 'PX', ttl)
  end
  if allowed then
    return { 1, remaining, 0, reset_after, 1 }
  end
  local retry = -1
  if asked <= max then
    local k
    -- #expand estimate(k, c, logf, asked, max)
    if not k then
      -- #expand boundaries(k, c, factor, asked, max)
    end
    retry = slot_start + k * resolution - now
    if retry > MAX_TIME then
      retry = MAX_TIME
    elseif retry < 0 then
      retry = 0
    end
  end
  return { 0, remaining, retry, reset_after, 1 }
end

-- Two or more limits. The state counts only if it was written for these limits, which were
-- checked then. counts[i]: limit i's count (as stored, then at stamp).
local floor, format = math.floor, string.format
local limits = unit .. ' ' .. table.concat(ARGV, ' ', 5)
local state = redis.pcall('GET', key)
-- #expand wrong_type(state, 'ar1')
local counts = {}
local last = nil
if state then
  local stored, time, at
  stored, time, at = string.match(state, '^([^|]*)|(%d+)()')
  for i = 1, n do
    if at then
      counts[i], at = string.match(state, '^ ([^ ]+)()', at)
    end
  end
  if at ~= #state + 1 then
    stored = nil
  end
  if stored == limits then
    last = time + 0
  end
end
if last == nil then
  -- Check the limits as the one-limit path does; only a bad one builds
  -- the helpers that name it.
  local valid = true
  for i = 5, #ARGV, 3 do
    local max, decay, resolution = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if not (find(max, '^[1-9]%d*$') and find(decay, '^[1-9]%d*$') and find(resolution, '^[1-9]%d*$'))
        or max + 0 > 1000000000 or decay + 0 < 1001 or decay + 0 > 1000000000 or resolution + 0 > MAX_TIME then
      valid = false
      break
    end
  end
  if not valid then
    -- #expand rare(helpers)
    local bad
    -- #expand limits_error(bad, helpers, n)
    return bad
  end
end
local server = not now
if server then
  -- #expand server_now(now, unit)
end
if last and last > now then
  -- A clock behind the last write (rarely). The state is stale when its
  -- last write lies more than the widest horizon of the limits ahead of
  -- now (and, for a caller's clock, of the server's TIME): written by a
  -- clock far ahead, it is deleted and the call counts from 0.
  local widest = 0
  for i = 5, #ARGV, 3 do
    local horizon
    -- #expand horizon(horizon, tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]))
    if horizon > widest then
      widest = horizon
    end
  end
  local gone
  -- #expand stale(gone, last, now, widest, server, unit)
  if gone then
    redis.call('DEL', key)
    last = nil
  end
end
local stamp = now
if last and last > now then
  stamp = last
end

-- The counts decayed to stamp, and the decision.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for i = 1, n do
  local arg = 3 * i + 2
  local c = 0
  if last then
    local resolution = ARGV[arg + 2] + 0
    -- #expand decayed(c, tonumber(counts[i]), ARGV[arg + 1] / 1000, floor(stamp / resolution) - floor(last / resolution))
  end
  counts[i] = c
  if c + asked > ARGV[arg] + 0 then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')

-- Add the events and reply from the state after this call: when allowed,
-- the limit with the fewest remaining decides; when denied, the one with
-- the longest retry (never first); ties go to the lower index.
local remaining, retry, reset_after, index = nil, 0, 0, 1
for i = 1, n do
  local arg = 3 * i + 2
  local max, factor, resolution = ARGV[arg] + 0, ARGV[arg + 1] / 1000, ARGV[arg + 2] + 0
  local c = counts[i]
  if record then
    c = c + count
    counts[i] = c
  end
  local slot_start = floor(stamp / resolution) * resolution
  local left = floor(max - c)
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
    local k
    -- #expand boundaries(k, c, factor, 0, 0)
    local reset = math.max(0, math.min(MAX_TIME, slot_start + k * resolution - now))
    if reset > reset_after then
      reset_after = reset
    end
  end
  if not allowed and retry ~= -1 then
    if asked > max then
      retry, index = -1, i
    elseif c + asked > max then
      local k
      -- #expand boundaries(k, c, factor, asked, max)
      local wait = math.max(0, math.min(MAX_TIME, slot_start + k * resolution - now))
      if wait > retry then
        retry, index = wait, i
      end
    end
  end
end
if record then
  state = format('%s|%d' .. string.rep(' %.17g', n), limits, stamp, unpack(counts, 1, n))
  local ttl
  -- #expand ttl_ms(ttl, unit, reset_after)
  redis.call('SET', key, state, 'PX', ttl)
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
