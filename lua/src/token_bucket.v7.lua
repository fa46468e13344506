-- ratelua token_bucket v7: one or more token buckets in one key.
--
-- KEYS[1]  the state key (the only key read or written)
-- ARGV[1]  eventCount: > 0 take that many tokens from every bucket and
--          decide; 0 decide whether one token could be taken (writes
--          nothing); < 0 delete the state and reply as for a fresh key
-- ARGV[2]  unit of now and of every duration: 's', 'ms' or 'us'
-- ARGV[3]  now in that unit, or '' for the server clock (TIME)
-- ARGV[4]  mode: '0' a denied call takes nothing from any bucket;
--          '1' every call takes its tokens, and a bucket may go down to
--          -capacity (a caller that keeps hammering stays blocked)
-- ARGV[5..] 1 to 16 limits of three integers:
--          capacity         tokens in a full bucket, 1..10^9
--          refill_amount    tokens added per refill_interval, 1..10^9
--          refill_interval  in the unit, 1..2^52;
--                           capacity * refill_interval <= 2^50
-- reply    {allowed, remaining, retry_after, reset_after, limit_index}
--
-- Every integer is canonical decimal text: '0', or an optional '-' then a
-- digit 1-9 then digits ('-0', '+1', '007', ' 1', '1e3' are refused). Bad
-- input is an error reply 'ERR ratelua: ...' naming the argument, and
-- writes nothing.
--
-- A fresh bucket is full. Tokens refill continuously: refill_amount per
-- refill_interval, exactly (tokens are kept as integers scaled by
-- refill_interval). Fresh means every bucket is full; reset_after is the time
-- until then. remaining is the whole tokens left in the emptiest bucket.
-- The executable specification is internal/model/token_bucket.go.
--
-- State with one limit (the common case): one integer X = t *
-- refill_amount + deficit, written with '%d' (Redis keeps it as an
-- integer, no string), where t is the call's now and deficit = (capacity -
-- tokens) * refill_interval, in [0, 2 * capacity * refill_interval]. At a
-- later now the deficit is X - now * refill_amount, clamped to [0, 2 *
-- capacity * refill_interval] (X / refill_amount is the time the bucket is
-- full again). X is exact only below 2^53: when X would not be (e.g. unit
-- us with a refill_amount above 5), the state is the text "<t> <deficit>"
-- instead, read as the same line. The unit is not stored and must not
-- change for a key. The limits are not stored either: every call checks
-- them, and they must not change for a key. (A call with other limits
-- reads the deficit as X - now * refill_amount under its own refill_amount
-- and clamps it to its own 2 * capacity * refill_interval: with the same
-- refill_amount the time until full carries over, and with the same
-- refill_interval too the missing tokens; with another refill_amount, at
-- times far from 0, the bucket reads as full when it is larger and as
-- -capacity when it is smaller.) A call with another number of limits
-- starts fresh (the layouts differ).
--
-- State with two or more limits: v4's, a string "<limits>|<time>
-- <tokens_1> ... <tokens_n>" where <limits> is ARGV[2] and ARGV[5..] joined
-- by spaces, exactly as the call that wrote it sent them (a call with other
-- limits or another unit starts fresh; a call with the same ones need not
-- check them again), time is the last write in the unit and tokens_i =
-- tokens * refill_interval.
--
-- TTL: reset_after, so the key vanishes when every bucket is full. With
-- two or more limits, a now earlier than the last write is treated as the
-- time of the last write (a clock behind never refills). With one limit it
-- is not: the deficit counts from the caller's now, so a clock behind the
-- last write finds the bucket emptier (by the refill of the time behind,
-- down to -capacity), which can only deny earlier, never admit more: X
-- never decreases, and a call that reads the deficit above 2 * capacity *
-- refill_interval (only a clock far behind does) records nothing, even in
-- mode '1'. The key must be written by this script only.
--
-- What v6 does apart from v5: one limit's state is one integer (above)
-- instead of v5's "<time> <deficit>" text with a unit suffix, so a now
-- earlier than the last write counts from now for one limit, and the unit
-- and the limits must not change for a key; the prelude's helpers are
-- macros expanded in place and the script builds no function on a
-- decision's path; one limit's integers are checked by anchored finds and
-- read by arithmetic, and the server clock too (no tonumber, format or
-- math.floor call but the two formats of the write). Two or more limits:
-- as v5. v5's and v6's states do not mix (state version 6).

-- What v7 does apart from v6: reserve and settle (issue 31; mode
-- 'reserve:<id>:<lifetime>' decides the estimate as mode '0' and holds
-- the id, 'settle:<id>' refunds estimate - actual or charges the
-- overrun, never denied). A key without reservations is v6's string,
-- read and written by both; one holding some is a hash: field s the
-- string, field o '<O> <first>' (O the sum of the estimates of the
-- reservation fields, first at or before their earliest expiry) and a
-- field r<id> '<expiry> <estimate> <unit> <limits>' per reservation.
--
-- A reservation holds its units in the bucket until it is settled or
-- expires (issue 32): tokens + O <= capacity in every bucket, O the
-- estimates of the live reservations (expiry after now), so the refill
-- stops at capacity - O; a reserve takes its estimate and adds it to O,
-- a settle refunds or charges and takes it out of O, and one expired at
-- e held until e: the bucket is at most capacity - O(e-) at e (O(e-) the
-- estimates of those expiring at or after e) and refills from there,
-- exactly, piecewise over the expiries (hold_deficit). Every write drops
-- the reservations expired at its now, so those left were all recorded
-- before each expiry still held. Why no span [a, b] then admits more than
-- capacity + rate * (b - a) when a reservation's units are admitted
-- anywhere between its reserve and its settle (B: a bucket of the same
-- capacity and rate from which each unit is taken when admitted; U the
-- units held and not yet admitted, U <= O): tokens <= B - U at every
-- moment (a plain admission or a reserve takes as much from both, a held
-- unit admitted moves from U to B's takings, a settle of the units used
-- gives tokens what leaves U, an expiry only lowers U, and tokens refill
-- only below capacity - O <= capacity - U, where B refills too); a plain
-- admission or a reserve needs tokens >= n, so B - U >= 0 always and B >=
-- U >= 0 at every admission of a held unit. (An overrun is charged, never
-- denied: debt, outside the bound.) retry_after and reset_after count as
-- if the holds ended now (a lower bound while they last). The hash's TTL
-- never shortens (PEXPIRE GT) and covers each reservation's lifetime plus
-- the refill of the units held after it, so the key never vanishes while
-- a hold still limits it. The spec: internal/model/token_bucket.go.
-- #include _prelude.v7.lua

-- limits_error sets OUT to the error reply for the first bad limit of the
-- N in ARGV, or to nil when every limit is valid; HELPERS are the rare
-- helpers (rare(HELPERS) expanded before).
-- #define limits_error(OUT, N, HELPERS)
OUT = nil
for i = 5, 2 + 3 * N, 3 do
  if HELPERS.integer(ARGV[i], 1, 1000000000) == nil then
    OUT = HELPERS.refuse(KEYS, ARGV, 3, i, 'capacity', '[1, 10^9]')
  elseif HELPERS.integer(ARGV[i + 1], 1, 1000000000) == nil then
    OUT = HELPERS.refuse(KEYS, ARGV, 3, i + 1, 'refill_amount', '[1, 10^9]')
  elseif HELPERS.integer(ARGV[i + 2], 1, MAX_TIME) == nil then
    OUT = HELPERS.refuse(KEYS, ARGV, 3, i + 2, 'refill_interval', '[1, 2^52]')
  end
  if OUT then
    break
  end
end
if OUT == nil then
  for i = 5, 2 + 3 * N, 3 do
    local capacity, interval = tonumber(ARGV[i]), tonumber(ARGV[i + 2])
    if capacity * interval > 1125899906842624 then
      OUT = redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3 .. ': capacity * refill_interval must be at most 2^50, got '
        .. string.format('%d * %d', capacity, interval))
      break
    end
  end
end
-- #end

-- deficit_at sets OUT to the deficit of the one-limit STATE (its text)
-- at time AT under refill AMOUNT: X - AT * AMOUNT, or from "<t>
-- <deficit>"; 0 for text of neither form.
-- #define deficit_at(OUT, STATE, AT, AMOUNT)
OUT = tonumber(STATE)
if OUT then
  OUT = OUT - AT * AMOUNT
else
  local deficit_time, deficit_behind = string.match(STATE, '^(%d+) (%d+)$')
  OUT = 0
  if deficit_time then
    OUT = deficit_behind + (deficit_time - AT) * AMOUNT
  end
end
-- #end

-- held reads a hash state (v7: a key holding reservations) after GET
-- answered STATE, an error: HASHED true, STATE its field s (v6's string
-- state), HOLDS its field o ('<O> <first>', see holds) and HELD the field
-- of reservation id when op names one (false when absent). A key of
-- another type, or a hash without s (another script's), is refused as
-- wrong_type does, unchanged.
-- #define held(HASHED, STATE, HELD, HOLDS)
do
  local held_fields
  if op then
    held_fields = redis.pcall('HMGET', key, 's', 'o', format('r%d', id))
  else
    held_fields = redis.pcall('HMGET', key, 's', 'o')
  end
  if held_fields.err or not held_fields[1] then
    return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than token_bucket'
      .. ' state (another script\'s state?): ' .. STATE.err)
  end
  HASHED, STATE, HOLDS, HELD = true, held_fields[1], held_fields[2], held_fields[3]
end
-- #end

-- holds sets O to the units the live reservations hold at now (the sum of
-- their estimates), FIRST to their earliest expiry (nil when none), and,
-- when it had to scan the hash, GONE to the reservations expired at now,
-- { expiry, estimate, field } latest first, and OPEN to the number of live
-- ones (else GONE and OPEN nil). HOLDS is the hash's field o, '<O>
-- <first>' as the last write left it: the sum of the estimates of every
-- reservation field and an expiry at or before the earliest of theirs.
-- While first is after now every field is live and o is O: read at no
-- cost. Else (or with no o) the fields are scanned (HGETALL), which the
-- next write then drops.
-- #define holds(HOLDS, O, FIRST, GONE, OPEN)
O, FIRST, GONE, OPEN = 0, nil, nil, nil
do
  local holds_o, holds_first
  if HOLDS then
    holds_o, holds_first = string.match(HOLDS, '^(%d+) (%d+)$')
  end
  if holds_o and holds_first + 0 > now then
    O, FIRST = holds_o + 0, holds_first + 0
  else
    local holds_all = redis.call('HGETALL', key)
    GONE, OPEN = {}, 0
    for i = 1, #holds_all, 2 do
      if string.byte(holds_all[i]) == 114 then
        local holds_expiry, holds_estimate = string.match(holds_all[i + 1], '^(%d+) (%d+)')
        holds_expiry, holds_estimate = holds_expiry + 0, holds_estimate + 0
        if holds_expiry > now then
          O, OPEN = O + holds_estimate, OPEN + 1
          if FIRST == nil or holds_expiry < FIRST then
            FIRST = holds_expiry
          end
        else
          GONE[#GONE + 1] = { holds_expiry, holds_estimate, holds_all[i] }
        end
      end
    end
    if #GONE > 1 then
      table.sort(GONE, function(a, b)
        return a[1] > b[1]
      end)
    end
  end
end
-- #end

-- hold_deficit sets OUT to the least deficit (capacity - tokens, scaled by
-- INTERVAL) of a bucket at AT under the holds (issue 32): O * INTERVAL,
-- the units held now; and for each reservation expired at e (in GONE,
-- latest first) O(e-) * INTERVAL - (AT - e) * AMOUNT, O(e-) the estimates
-- of those whose expiry is at or after e: the bucket stopped at capacity
-- - O(e-) until e and refilled from there. At most 2 * FULL (the floor of
-- a bucket, -capacity). A term past 2^53 is rounded, but then it is far
-- below 0, never the largest.
-- #define hold_deficit(OUT, O, GONE, INTERVAL, AMOUNT, FULL, AT)
OUT = O * INTERVAL
if GONE then
  local hold_acc = O
  for g = 1, #GONE do
    hold_acc = hold_acc + GONE[g][2]
    local hold_term = hold_acc * INTERVAL - (AT - GONE[g][1]) * AMOUNT
    if hold_term > OUT then
      OUT = hold_term
    end
  end
end
if OUT > 2 * FULL then
  OUT = 2 * FULL
end
-- #end

-- live sets EST to the estimate of the reservation whose field text is
-- HELD when it is live (its expiry after now), else to nil. A live
-- reservation recorded under other limits (LIMITS: the unit and the
-- limits, as ARGV sends them) is an error, nothing written.
-- #define live(EST, HELD, LIMITS)
EST = nil
if HELD then
  local live_expiry, live_estimate, live_limits = string.match(HELD, '^(%d+) (%d+) (.*)$')
  if live_expiry and live_expiry + 0 > now then
    if live_limits ~= LIMITS then
      return redis.error_reply('ERR ratelua: ARGV[2] and ARGV[5..] must be the unit and the limits of reservation '
        .. format('%d', id) .. " ('" .. string.sub(live_limits, 1, 200) .. "'), got '" .. string.sub(LIMITS, 1, 200) .. "'")
    end
    EST = live_estimate + 0
  end
end
-- #end

-- hash_write writes state text X with TTL (ms, text) to a key that is or
-- becomes a hash (v7): HASHED, STATE and HELD as held read them, the
-- holds as holds read them (hold_o, hold_first, hold_gone, hold_open);
-- SETTLED true for a settle (its reservation forgotten), else a recorded
-- call (a reserve adds its reservation's field '<expiry> <estimate>
-- <LIMITS>'). The reservations expired at now (hold_gone) are dropped,
-- and o is written with the fields left. A key left holding none is v6's
-- string again (SET), or is deleted when FULL (every bucket full: a fresh
-- key). On a hash the TTL never shortens (PEXPIRE GT), so it covers every
-- reservation's lifetime and the refill of its units after it. A reserve
-- of a new id on a hash holding MAX_RESERVATIONS live reservations is
-- refused (nothing written).
-- #define hash_write(HASHED, STATE, HELD, X, TTL, LIMITS, SETTLED, FULL)
do
  local write_o, write_first, field, text = hold_o, hold_first, nil, nil
  if SETTLED then
    write_o = write_o - estimate
  elseif op == 'reserve' then
    if HASHED and not HELD then
      local open = hold_open
      if open == nil then
        open = redis.call('HLEN', key) - 2
      end
      if open >= MAX_RESERVATIONS then
        return redis.error_reply('ERR ratelua: KEYS[1] holds ' .. MAX_RESERVATIONS .. ' open reservations, the most'
          .. ' a key holds: settle or cancel one, or wait for its lifetime to pass, before ARGV[4] reserves another')
      end
    end
    field, text = format('r%d', id), format('%d %d %s', now + lifetime, count, LIMITS)
    write_o = write_o + count
    if write_first == nil or now + lifetime < write_first then
      write_first = now + lifetime
    end
  end
  if write_o <= 0 then
    if HASHED then
      redis.call('DEL', key)
    end
    if not (FULL) then
      redis.call('SET', key, X, 'PX', TTL)
    end
  elseif HASHED then
    if hold_gone and #hold_gone > 0 then
      local gone = {}
      for g = 1, #hold_gone do
        gone[g] = hold_gone[g][3]
      end
      redis.call('HDEL', key, unpack(gone))
    end
    if SETTLED then
      redis.call('HDEL', key, format('r%d', id))
    end
    if field then
      redis.call('HSET', key, 's', X, 'o', format('%d %d', write_o, write_first), field, text)
    else
      redis.call('HSET', key, 's', X, 'o', format('%d %d', write_o, write_first))
    end
    redis.call('PEXPIRE', key, TTL, 'GT')
  else
    if STATE then
      redis.call('DEL', key)
    end
    redis.call('HSET', key, 's', X, 'o', format('%d %d', write_o, write_first), field, text)
    redis.call('PEXPIRE', key, TTL)
  end
end
-- #end

-- #call: what follows runs on every call (in ratelua_v7, the function body)
-- KEYS, ARGV and redis as locals: a global is a table lookup on every use
-- (about 150 instructions; a local, a register).
local KEYS, ARGV, redis = KEYS, ARGV, redis
-- The common call first (issue 35): one limit, count 1, mode '0', unit
-- ms, a key holding a string state or nothing, the deficit within [..,
-- 2 * capacity * refill_interval]. It decides as the general path below,
-- by the same arithmetic, with fewer steps (no count, mode or reservation
-- to read, no hold, no mode '1'). Any other call, or one of these that
-- finds anything else, leaves the block by break (a jump: no test of a
-- flag on the way out) and goes on to the general path having written
-- nothing, with the server's time (got_now) and the key's GET (got) when
-- it read them: no command is sent twice. (tonumber and string.find are
-- looked up where used: each is used once here, and a local costs its
-- lookup and a move. The block's bounds are written as constants: a local
-- holding one is a register and a load.)
local got, got_now
repeat
  if not (#ARGV == 7 and ARGV[1] == '1' and ARGV[4] == '0' and ARGV[2] == 'ms' and #KEYS == 1) then
    break
  end
  local now, c, a, r = ARGV[3], ARGV[5], ARGV[6], ARGV[7]
  if now == '' then
    if not string.find(c .. ' ' .. a .. ' ' .. r, '^[1-9]%d* [1-9]%d* [1-9]%d*$') then
      break
    end
    local time = redis.call('TIME')
    local micros = time[2] + 0
    now = time[1] * 1000 + (micros - micros % 1000) / 1000
    got_now = now
  elseif string.find(now .. ' ' .. c .. ' ' .. a .. ' ' .. r, '^[1-9]%d* [1-9]%d* [1-9]%d* [1-9]%d*$') then
    now = now + 0
    if now > 4503599627370496 then
      break
    end
  else
    break
  end
  local capacity, amount, interval = c + 0, a + 0, r + 0
  local full = capacity * interval
  if capacity > 1000000000 or amount > 1000000000 or full > 1125899906842624 then
    break
  end
  got = redis.pcall('GET', KEYS[1])
  -- The deficit at now: 0 for nothing; from a number X or the text
  -- "<t> <deficit>", at least 0. Anything else goes on to the general
  -- path, as does a deficit above 2 * full: tonumber is nil for an error
  -- table too (a hash holding reservations, another type), whose err is
  -- told from a string's (nil) only when the state is not a number.
  local deficit = 0
  if got then
    deficit = tonumber(got)
    if deficit then
      deficit = deficit - now * amount
    elseif got.err then
      break
    else
      local t, behind = string.match(got, '^(%d+) (%d+)$')
      if not t then
        break
      end
      deficit = behind + (t - now) * amount
    end
    if deficit < 0 then
      deficit = 0
    elseif deficit > 2 * full then
      break
    end
  end
  local level = full - deficit
  if level < interval then
    -- Denied for want of a token (ceil of the wait, as below); a level
    -- under one token leaves 0 whole tokens.
    local need = interval - level
    return { 0, 0, (need + (-need) % amount) / amount, (deficit + (-deficit) % amount) / amount, 1 }
  end
  level, deficit = level - interval, deficit + interval
  -- reset_after, the TTL too: ceil(deficit / amount) >= 1.
  local reset_after = (deficit + (-deficit) % amount) / amount
  local x, px = now * amount + deficit, reset_after
  -- Redis 7.0 gets the numbers as text (see the write below), by one
  -- lookup of string.format for both.
  if x >= 9007199254740992 then
    x = string.format('%d %d', now, deficit)
    if (redis.REDIS_VERSION_NUM or 0) < 0x070200 then
      px = string.format('%d', px)
    end
  elseif (redis.REDIS_VERSION_NUM or 0) < 0x070200 then
    local format = string.format
    x, px = format('%d', x), format('%d', px)
  end
  redis.call('SET', KEYS[1], x, 'PX', px)
  return { 1, (level - level % interval) / interval, 0, reset_after, 1 }
until true
-- What the paths below use on every call is held in a local: a global and
-- a field cost a table lookup each (math.floor and string.format are
-- looked up where the rarer paths use them).
local tonumber, find = tonumber, string.find
-- MAX_RESERVATIONS bounds the reservations one key holds (open, or
-- expired and not yet dropped): a reserve of a new id on a key holding
-- that many live ones is refused, so a key cannot grow without bound nor a
-- call take unbounded work.
local MAX_RESERVATIONS = 1000

local unit, now, mode = ARGV[2], false, ARGV[4]
local count = 1
if ARGV[1] ~= '1' then
  -- #expand integer(count, ARGV[1], -MAX_TIME, MAX_TIME)
end
local n = (#ARGV - 4) / 3
-- One limit, the common case: now (unless '' or '0') and the limit's three
-- integers are checked canonical at once, in one find of their text joined
-- by spaces (every call pays a find per string searched, about 1k
-- instructions, and the text joined costs less than three more), then read
-- by arithmetic (no tonumber call). Any other case is checked one argument
-- at a time below.
local capacity, amount, interval
if n == 1 then
  -- (each ARGV[i] read once: a read is a table lookup)
  local text, c, a, r = ARGV[3], ARGV[5], ARGV[6], ARGV[7]
  if text == '' then
    if find(c .. ' ' .. a .. ' ' .. r, '^[1-9]%d* [1-9]%d* [1-9]%d*$') then
      capacity, amount, interval = c + 0, a + 0, r + 0
    end
  elseif find(text .. ' ' .. c .. ' ' .. a .. ' ' .. r, '^[1-9]%d* [1-9]%d* [1-9]%d* [1-9]%d*$') then
    now, capacity, amount, interval = text + 0, c + 0, a + 0, r + 0
    if now > MAX_TIME then
      now = nil
    end
  end
end
if now == false and ARGV[3] ~= '' then
  -- Canonical: '0' or an anchored find of the digits, then read by
  -- arithmetic (no tonumber call). A call of fewer than 3 arguments has
  -- no ARGV[3]: it is refused below, naming the first one missing.
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
-- A reservation's mode (v7): parsed only when the mode is not '0' or '1'.
-- A reserve decides as mode '0'; least is the smallest ARGV[1] it takes.
local op, id, lifetime, least = nil, 0, 0, 0
if mode ~= '0' and mode ~= '1' then
  -- #expand reservation(op, id, lifetime, mode)
  if op then
    mode = '0'
    if op == 'reserve' then
      least = 1
    end
  end
end
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
  return helpers.refuse(KEYS, args, 3)
end
local key = KEYS[1]

if n == 1 and count >= 0 then
  -- One bucket, its limits checked on every call: at once with now above,
  -- else here, canonical positive integers by an anchored find, then read
  -- by arithmetic, which takes digits as a number (no tonumber call).
  -- refill_interval <= 2^52 follows from capacity >= 1 and the product's
  -- bound. A bad limit is named below.
  if capacity == nil then
    capacity, amount, interval = ARGV[5], ARGV[6], ARGV[7]
    if find(capacity, '^[1-9]%d*$') and find(amount, '^[1-9]%d*$') and find(interval, '^[1-9]%d*$') then
      capacity, amount, interval = capacity + 0, amount + 0, interval + 0
    else
      capacity = nil
    end
  end
  if capacity and capacity <= 1000000000 and amount <= 1000000000 and capacity * interval <= 1125899906842624 then
    local state = got
    if got == nil then
      state = redis.pcall('GET', key)
    end
    -- v7: a key holding reservations is a hash (held: the reservation
    -- op names, its field's text), its field s v6's string state. The
    -- reply is false, a string or an error table, and a string's field
    -- err is nil (the string library has none): no type() call. format is
    -- looked up only on the paths that use it.
    local hashed, held, holds, format = false, nil, nil, nil
    if state and state.err then
      format = string.format
      -- #expand held(hashed, state, held, holds)
    end
    local server = not now
    if got_now then
      now = got_now
    elseif server then
      -- #expand server_now(now, unit)
    end
    -- level = tokens * interval, in [-full, full].
    local full = capacity * interval
    local level, beyond, deficit = full, false, 0
    if state then
      -- The deficit at now: X - now * amount, or from "<t> <deficit>". A
      -- product past 2^53 is rounded, but then the difference is far
      -- outside [0, 2 * full] on the same side, and clamped.
      -- #expand deficit_at(deficit, state, now, amount)
      if deficit > 2 * full then
        -- Below the floor: only a now behind the last write (or other
        -- limits) reads so. The bucket is at -capacity, and the call
        -- records nothing: a write would move X back, refilling the
        -- bucket for a caller whose clock is right.
        level, beyond = -full, true
        if deficit > 3 * full then
          -- Stale (rarely): the bucket is full again more than three
          -- refill horizons (full / amount: an empty bucket's refill)
          -- after now, so the last write lies more than one horizon
          -- ahead of now (its deficit is at most 2 * full). For a
          -- caller's clock, the server's TIME must read so too. A stale
          -- state was written by a clock far ahead: deleted (with its
          -- reservations), and the call counts from a full bucket.
          local gone = true
          if not server then
            local clock_now, clock_deficit
            -- #expand server_now(clock_now, unit)
            -- #expand deficit_at(clock_deficit, state, clock_now, amount)
            gone = clock_deficit > 3 * full
          end
          if gone then
            redis.call('DEL', key)
            level, beyond, deficit = full, false, 0
            state, hashed, held = false, false, nil
          end
        end
      elseif deficit > 0 then
        level = full - deficit
      end
    end
    -- v7: the reservations held (issue 32) keep the deficit at or above
    -- the units they hold: the refill stops at capacity - O.
    local hold_o, hold_first, hold_gone, hold_open = 0, nil, nil, nil
    if hashed then
      -- #expand holds(holds, hold_o, hold_first, hold_gone, hold_open)
      local least
      -- #expand hold_deficit(least, hold_o, hold_gone, interval, amount, full, now)
      if deficit < least then
        deficit = least
        if not beyond then
          level = full - deficit
        end
      end
    end
    local asked = count
    if asked < 1 then
      asked = 1
    end
    local allowed = asked <= capacity and level >= asked * interval
    local record = count > 0 and (allowed or mode == '1') and not beyond
    -- v7: a reserve or a settle. estimate: the live reservation's.
    local write, estimate, limits, settled = record, nil, nil, 0
    if op then
      format = string.format
      limits = unit .. ' ' .. ARGV[5] .. ' ' .. ARGV[6] .. ' ' .. ARGV[7]
      -- #expand live(estimate, held, limits)
      if op == 'settle' then
        if estimate == nil then
          -- Not held (unknown, expired or settled): nothing written; the
          -- reply of a peek, marked.
          record, asked, allowed = false, 1, level >= interval
          write = 'none'
        else
          -- The difference is refunded (capped at capacity) or charged
          -- (never denied, down to -capacity; nothing below it), on the
          -- deficit at now, not clamped to 2 * full.
          if deficit < 0 then
            deficit = 0
          end
          local diff = estimate - count
          if diff > 0 then
            deficit = deficit - diff * interval
            if deficit < 0 then
              deficit = 0
            end
          elseif diff < 0 and deficit <= 2 * full then
            if diff < -2 * capacity then
              diff = -2 * capacity
            end
            deficit = deficit - diff * interval
            if deficit > 2 * full then
              deficit = 2 * full
            end
          end
          level, settled = full - deficit, deficit
          if level < -full then
            level = -full
          end
          record, count, asked, allowed, write = false, 0, 1, level >= interval, 'settle'
        end
      elseif estimate then
        -- Held already (a reserve retried): nothing recorded, the reply
        -- of an admission, read as a peek.
        record, count, asked, allowed, write = false, 0, 1, true, false
      end
    end
    if record then
      -- Taking more than 2 * capacity always ends at the floor.
      local taken = count
      if taken > 2 * capacity then
        taken = 2 * capacity
      end
      level = level - taken * interval
      if level < -full then
        level = -full
      end
    end
    -- remaining is floor(level / interval), and the bucket is full again
    -- after ceil((full - level) / amount) <= 2^51, each a multiple of the
    -- divisor (found by %, exact for integers under 2^52) divided by it,
    -- with no math.floor call.
    local remaining, reset_after = 0, 0
    if level > 0 then
      remaining = (level - level % interval) / interval
    end
    if level < full then
      reset_after = (full - level + (level - full) % amount) / amount
    end
    if write == 'none' then
      return { 0, remaining, -1, reset_after, 0 }
    end
    if write then
      local ttl = reset_after
      if op == 'reserve' then
        -- The key outlives the last hold's end and the refill of the
        -- units held after it (hold_o + count, with this one).
        local units = (hold_o + count) * interval
        local hold_ttl = lifetime + (units + (-units) % amount) / amount
        if unit == 'ms' and hold_ttl > MAX_TIME then
          hold_ttl = MAX_TIME
        end
        if hold_ttl > ttl then
          ttl = hold_ttl
        end
      end
      -- On a server that turns a number argument of redis.call into
      -- text by ll2string (Valkey 8, Redis 7.2 and later), an integer
      -- under 2^53 is passed as a number: the same text as format('%d'),
      -- and cheaper than a string made by the script. Redis 7.0 writes it
      -- by snprintf('%.17g'), also exact, but dearer than format: there
      -- the script makes the text (and where REDIS_VERSION_NUM is not
      -- set, an emulator).
      local numbers = (redis.REDIS_VERSION_NUM or 0) >= 0x070200
      if not numbers then
        format = string.format
      end
      if unit ~= 'ms' then
        -- #expand ttl_ms(ttl, unit, ttl)
      elseif ttl < 1 then
        ttl = 1
      elseif not numbers then
        ttl = format('%d', ttl)
      end
      local deficit = full - level
      if write == 'settle' then
        deficit = settled
      end
      local x = now * amount + deficit
      if x >= 9007199254740992 then
        x = string.format('%d %d', now, deficit)
      elseif not numbers then
        x = format('%d', x)
      end
      if not (hashed or op) then
        redis.call('SET', key, x, 'PX', ttl)
      else
        -- #expand hash_write(hashed, state, held, x, ttl, limits, write == 'settle', reset_after == 0)
      end
    end
    if allowed then
      return { 1, remaining, 0, reset_after, 1 }
    elseif asked > capacity then
      return { 0, remaining, -1, reset_after, 1 }
    end
    -- Denied for want of tokens: level < asked * interval, so the wait is
    -- ceil((asked * interval - level) / amount) >= 1.
    local need = asked * interval - level
    return { 0, remaining, (need + (-need) % amount) / amount, reset_after, 1 }
  end
end

-- A reset, a bad limit, or two or more buckets. The state of two or more
-- counts only if it was written for these limits, which were checked
-- then. lim[4i-3 .. 4i]: limit i's capacity, refill_amount,
-- refill_interval and tokens * refill_interval (as stored, then at stamp).
-- state: the string state, or a hash's field s (hashed; held as held
-- reads it).
local floor, format = math.floor, string.format
local limits, lim, last = nil, {}, nil
local state, hashed, held, holds = false, false, nil, nil
if count >= 0 and n ~= 1 then
  limits = unit .. ' ' .. table.concat(ARGV, ' ', 5)
  state = redis.pcall('GET', key)
  if type(state) == 'table' then
    -- #expand held(hashed, state, held, holds)
  end
  if state then
    local stored, time, at
    stored, time, at = string.match(state, '^([^|]*)|(%d+)()')
    for i = 4, 4 * n, 4 do
      if at then
        lim[i], at = string.match(state, '^ (%-?%d+)()', at)
      end
    end
    if at ~= #state + 1 then
      stored = nil
    end
    if stored == limits then
      last = time + 0
    end
  end
end
if last == nil then
  -- A fresh key, or one written for other limits: the limits are checked,
  -- each by one find of its three integers joined by spaces (canonical,
  -- 1 or more) and arithmetic (capacity and refill_amount <= 10^9,
  -- refill_interval <= 2^52, capacity * refill_interval <= 2^50, exact or
  -- far above). Only a limit that fails, a reset or one limit builds the
  -- rare helpers (issue 35: they cost about 5k instructions a limit more).
  local valid = count >= 0 and n ~= 1
  if valid then
    for i = 5, 2 + 3 * n, 3 do
      local c, a, r = ARGV[i], ARGV[i + 1], ARGV[i + 2]
      valid = false
      if string.find(c .. ' ' .. a .. ' ' .. r, '^[1-9]%d* [1-9]%d* [1-9]%d*$') then
        c, a, r = c + 0, a + 0, r + 0
        valid = c <= 1000000000 and a <= 1000000000 and r <= MAX_TIME and c * r <= 1125899906842624
      end
      if not valid then
        break
      end
    end
  end
  if not valid then
    -- #expand rare(helpers)
    local bad
    -- #expand limits_error(bad, n, helpers)
    if bad then
      return bad
    elseif count < 0 then
      return helpers.fresh(KEYS, ARGV, 3)
    elseif n == 1 then
      -- Not reached: one limit that passes these checks passed the ones
      -- above.
      return redis.error_reply('ERR ratelua: internal error: limit 1 checked twice')
    end
  end
end
local server = not now
if server then
  -- #expand server_now(now, unit)
end
if last and last > now then
  -- A clock behind the last write (rarely). The state is stale when its
  -- last write lies more than the widest refill horizon (the longest
  -- ceil(capacity * refill_interval / refill_amount), an empty bucket's
  -- refill) ahead of now and, for a caller's clock, of the server's TIME:
  -- written by a clock far ahead, it is deleted and the call counts from
  -- full buckets.
  local widest = 0
  for i = 5, #ARGV, 3 do
    local full, amount = ARGV[i] * ARGV[i + 2], ARGV[i + 1] + 0
    local horizon = (full + (-full) % amount) / amount
    if horizon > widest then
      widest = horizon
    end
  end
  local gone
  -- #expand stale(gone, last, now, widest, server, unit)
  if gone then
    redis.call('DEL', key)
    last = nil
    state, hashed, held = false, false, nil
  end
end
local stamp = now
if last and last > now then
  stamp = last
end
-- v7: the reservations held (issue 32), as with one limit, O at now and
-- the buckets at stamp.
local hold_o, hold_first, hold_gone, hold_open = 0, nil, nil, nil
if hashed then
  -- #expand holds(holds, hold_o, hold_first, hold_gone, hold_open)
end

-- The buckets at stamp, and the decision. Every quotient below is of
-- integers under 2^52 in magnitude, so math.floor of the division is exact.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for i = 4, 4 * n, 4 do
  local arg = 3 * i / 4 + 2
  local capacity, amount, interval = ARGV[arg] + 0, ARGV[arg + 1] + 0, ARGV[arg + 2] + 0
  local full = capacity * interval
  local level = full
  if last then
    level = lim[i] + 0
    if level > full then
      level = full
    end
    -- Full again after ceil((full - level) / amount).
    if stamp - last >= -floor((level - full) / amount) then
      level = full
    else
      level = level + (stamp - last) * amount
    end
  end
  if hashed then
    local least
    -- #expand hold_deficit(least, hold_o, hold_gone, interval, amount, full, stamp)
    if level > full - least then
      level = full - least
    end
  end
  lim[i - 3], lim[i - 2], lim[i - 1], lim[i] = capacity, amount, interval, level
  if asked > capacity or level < asked * interval then
    allowed = false
  end
end
local record = count > 0 and (allowed or mode == '1')
-- v7: a reserve or a settle, as with one limit, at stamp. estimate: the
-- live reservation's.
local write, estimate = record, nil
if op then
  -- #expand live(estimate, held, limits)
  if op == 'settle' then
    allowed = true
    for i = 4, 4 * n, 4 do
      local capacity, interval, level = lim[i - 3], lim[i - 1], lim[i]
      if estimate then
        local full, diff = capacity * interval, estimate - count
        if diff > 0 then
          level = level + diff * interval
          if level > full then
            level = full
          end
        elseif diff < 0 then
          if diff < -2 * capacity then
            diff = -2 * capacity
          end
          level = level + diff * interval
          if level < -full then
            level = -full
          end
        end
        lim[i] = level
      end
      if level < interval then
        allowed = false
      end
    end
    record, count, asked, write = false, 0, 1, 'settle'
    if estimate == nil then
      write = 'none'
    end
  elseif estimate then
    record, count, asked, allowed, write = false, 0, 1, true, false
  end
end

-- Take the tokens and reply from the state after this call: when allowed,
-- the limit with the fewest remaining decides; when denied, the one with
-- the longest retry (never first); ties go to the lower index.
local remaining, retry, reset_after, index = nil, 0, 0, 1
for i = 4, 4 * n, 4 do
  local capacity, amount, interval, level = lim[i - 3], lim[i - 2], lim[i - 1], lim[i]
  local full = capacity * interval
  if record then
    -- Taking more than 2 * capacity always ends at the floor.
    local taken = count
    if taken > 2 * capacity then
      taken = 2 * capacity
    end
    level = level - taken * interval
    if level < -full then
      level = -full
    end
    lim[i] = level
  end
  local left = 0
  if level > 0 then
    left = floor(level / interval)
  end
  if remaining == nil or left < remaining then
    remaining = left
    if allowed then
      index = i / 4
    end
  end
  if level < full then
    local reset = math.max(0, math.min(MAX_TIME, stamp - floor((level - full) / amount) - now))
    if reset > reset_after then
      reset_after = reset
    end
  end
  if not allowed and retry ~= -1 then
    local need = asked * interval
    if asked > capacity then
      retry, index = -1, i / 4
    elseif level < need then
      local wait = math.max(0, math.min(MAX_TIME, stamp - floor((level - need) / amount) - now))
      if wait > retry then
        retry, index = wait, i / 4
      end
    end
  end
end
if write == 'none' then
  return { 0, remaining, -1, reset_after, 0 }
end
if write then
  local tokens = {}
  for i = 1, n do
    tokens[i] = lim[4 * i]
  end
  local ttl = reset_after
  if op == 'reserve' then
    -- As with one limit: the lifetime and the longest refill of the
    -- units held.
    for i = 4, 4 * n, 4 do
      local units = (hold_o + count) * lim[i - 1]
      local hold_ttl = lifetime + (units + (-units) % lim[i - 2]) / lim[i - 2]
      if hold_ttl > ttl then
        ttl = hold_ttl
      end
    end
  end
  -- #expand ttl_ms(ttl, unit, ttl)
  local x = format('%s|%d' .. string.rep(' %d', n), limits, stamp, unpack(tokens, 1, n))
  if not (hashed or op) then
    redis.call('SET', key, x, 'PX', ttl)
  else
    -- #expand hash_write(hashed, state, held, x, ttl, limits, write == 'settle', reset_after == 0)
  end
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
