-- ratelua v7 prelude, shared by every v7 script (generated into each
-- released file; do not edit there). It holds two constants and macros
-- (-- #define ... -- #end, see internal/luagen/macro.go): a script expands
-- a macro where it needs its code, so a script run by EVALSHA builds no
-- function on its common path (v5's prelude built four closures on every
-- call). In the Functions library ratelua_v7 the constants are set once
-- per FUNCTION LOAD.
--
-- Integers are canonical decimal text: '0', or an optional '-' then a digit
-- 1-9 then digits. '-0', leading zeros, '+', spaces, exponents, hex and
-- fractions are refused (such text is not what '%d' writes). Numbers written to a state or passed to
-- redis.call are turned into text by string.format ('%d'), never by '..'
-- or tostring.
local MAX_TIME = 4503599627370496 -- 2^52: bound of now, durations and replies
local MAX_LIMITS = 16

-- integer sets OUT to TEXT as a number when it is a canonical integer in
-- [LO, HI] (|LO|, |HI| <= 2^52), else to nil. The text must be '0' or
-- match '-'? [1-9] digits*, which is what '%d' writes back (a find makes no
-- string), and is then read by arithmetic (issue 35: tonumber converts its
-- argument twice, about 1.1k instructions more; digits too many for a
-- number read as inf, above HI).
-- #define integer(OUT, TEXT, LO, HI)
OUT = nil
if TEXT == '0' or (TEXT and string.find(TEXT, '^%-?[1-9]%d*$')) then
  OUT = TEXT + 0
  if OUT < LO or OUT > HI then
    OUT = nil
  end
end
-- #end

-- server_now sets OUT to the server's TIME in UNIT. TIME replies two
-- digit strings, which arithmetic reads without a call (issue 35: tonumber
-- converts its argument twice and math.floor is a call, about 2.5k
-- instructions more in all); the quotient by 1000 is exact.
-- #define server_now(OUT, UNIT)
do
  local time = redis.call('TIME')
  if UNIT == 'ms' then
    local micros = time[2] + 0
    OUT = time[1] * 1000 + (micros - micros % 1000) / 1000
  elseif UNIT == 's' then
    OUT = time[1] + 0
  else
    OUT = time[1] * 1000000 + time[2]
  end
end
-- #end

-- stale sets OUT to true when a state last written at LAST is stale for a
-- call at NOW (the caller's, or the server's clock) under limits whose
-- widest window is WIDEST: LAST lies more than WIDEST ahead of NOW and,
-- for a caller's clock (SERVER false), of the server's TIME too (read only
-- then, rarely). A stale state was written by a clock far ahead (a caller
-- at year 9999): the script deletes it and counts from now, so that one
-- caller's clock cannot lock a key for the others beyond the widest window.
-- #define stale(OUT, LAST, NOW, WIDEST, SERVER, UNIT)
OUT = false
if LAST > NOW + WIDEST then
  OUT = true
  if not SERVER then
    -- The server's TIME in UNIT, as server_now (macros do not nest).
    local stale_time = redis.call('TIME')
    local stale_clock = tonumber(stale_time[1]) * 1000000 + tonumber(stale_time[2])
    if UNIT == 's' then
      stale_clock = tonumber(stale_time[1])
    elseif UNIT == 'ms' then
      stale_clock = tonumber(stale_time[1]) * 1000 + math.floor(tonumber(stale_time[2]) / 1000)
    end
    OUT = LAST > stale_clock + WIDEST
  end
end
-- #end

-- wrong_type returns the error reply of a call on a key of another type
-- than the script's state (issue 30, L2) when READ, the reply of the
-- script's first read of KEYS[1] by redis.pcall, is an error: a WRONGTYPE
-- from another script's state (a hash, a sorted set or a string). NAME
-- names the script. Nothing is written.
-- #define wrong_type(READ, NAME)
if type(READ) == 'table' and READ.err then
  return redis.error_reply('ERR ratelua: KEYS[1] holds a value of another type than ' .. NAME
    .. ' state (another script\'s state?): ' .. READ.err)
end
-- #end

-- ttl_ms sets OUT to the PEXPIRE of a state fresh after DURATION in UNIT:
-- whole milliseconds, rounded up, within [1, 2^52], as text.
-- #define ttl_ms(OUT, UNIT, DURATION)
do
  local ms = DURATION
  if UNIT == 'us' then
    -- ceil(DURATION / 1000), exactly: the float quotient is floor or
    -- floor + 1.
    ms = math.floor(DURATION / 1000)
    if ms * 1000 > DURATION then
      ms = ms - 1
    end
    if ms * 1000 < DURATION then
      ms = ms + 1
    end
  elseif UNIT == 's' then
    ms = DURATION * 1000
  end
  if ms > MAX_TIME then
    ms = MAX_TIME
  elseif ms < 1 then
    ms = 1
  end
  OUT = string.format('%d', ms)
end
-- #end

-- rare declares the local table HELPERS of the uncommon paths, a refused
-- call and a reset: HELPERS.refuse and HELPERS.fresh below, and
-- HELPERS.integer, integer as a function. Expand it in the branch that
-- needs them, so that only such a call builds them.
-- #define rare(HELPERS)
local HELPERS = {}

-- HELPERS.integer returns text as a number when it is a canonical integer
-- in [lo, hi], else nil (the macro integer as a function).
function HELPERS.integer(text, lo, hi)
  local number = tonumber(text)
  if number == nil or number < lo or number > hi or (text ~= '0' and not string.find(text, '^%-?[1-9]%d*$')) then
    return nil
  end
  return number
end
local integer = HELPERS.integer

-- refuse is the error reply for a call whose KEYS, ARGV[1..4] or number
-- of limit arguments are wrong, naming its first wrong argument; or,
-- given i, for the bad limit argument ARGV[i]: the limit's field `name`
-- must be an integer in `range` (in words).
function HELPERS.refuse(KEYS, ARGV, group, i, name, range)
  -- quote shows an argument: at most 40 bytes, control and non-ASCII
  -- bytes escaped.
  local function quote(value)
    if type(value) ~= 'string' then
      return 'nothing'
    end
    local shown = string.gsub(string.sub(value, 1, 40), '[^ -~]', function(byte)
      return string.format('\\x%02x', string.byte(byte))
    end)
    if #value > 40 then
      shown = shown .. '...'
    end
    return "'" .. shown .. "'"
  end
  local message
  if i then
    message = 'ARGV[' .. i .. '] (limit ' .. math.floor((i - 5) / group) + 1 .. ' ' .. name
      .. ') must be a canonical integer in ' .. range .. ', got ' .. quote(ARGV[i])
  elseif #KEYS ~= 1 then
    message = 'expected exactly 1 key (the state key), got ' .. #KEYS
  elseif integer(ARGV[1], -MAX_TIME, MAX_TIME) == nil then
    message = 'ARGV[1] eventCount must be a canonical integer in [-2^52, 2^52], got ' .. quote(ARGV[1])
  elseif ARGV[2] ~= 'ms' and ARGV[2] ~= 's' and ARGV[2] ~= 'us' then
    message = "ARGV[2] unit must be 's', 'ms' or 'us', got " .. quote(ARGV[2])
  elseif ARGV[3] ~= '' and integer(ARGV[3], 0, MAX_TIME) == nil then
    message = 'ARGV[3] now must be empty (server clock) or a canonical integer in [0, 2^52], got ' .. quote(ARGV[3])
  elseif ARGV[4] ~= '0' and ARGV[4] ~= '1' then
    message = "ARGV[4] mode must be '0' (count allowed events) or '1' (count every attempt), got " .. quote(ARGV[4])
  else
    message = 'expected 1 to ' .. MAX_LIMITS .. ' limits of ' .. group .. ' integers after ARGV[4], got '
      .. math.max(#ARGV - 4, 0) .. ' arguments'
  end
  return redis.error_reply('ERR ratelua: ' .. message)
end

-- fresh deletes the state and replies as for a fresh key: every limit
-- admits, and remaining is the smallest limit maximum, the first integer
-- of each limit's group in ARGV.
function HELPERS.fresh(KEYS, ARGV, group)
  redis.call('DEL', KEYS[1])
  local remaining = tonumber(ARGV[5])
  for i = 5 + group, #ARGV, group do
    local maximum = tonumber(ARGV[i])
    if maximum < remaining then
      remaining = maximum
    end
  end
  return { 1, remaining, 0, 0, 0 }
end
-- #end

-- compat declares v5's helper functions integer, server_now, ttl_ms and
-- rare, each built on every call by EVALSHA: for a script not yet written
-- with the macros above.
-- #define compat()
-- integer returns text as a number when it is a canonical integer in
-- [lo, hi] (|lo|, |hi| <= 2^52), else nil. The text must be '0' or match
-- '-'? [1-9] digits*, which is what '%d' writes back (a find makes no
-- string; a NaN fails the pattern).
local function integer(text, lo, hi)
  local number = tonumber(text)
  if number == nil or number < lo or number > hi or (text ~= '0' and not string.find(text, '^%-?[1-9]%d*$')) then
    return nil
  end
  return number
end

-- server_now is the server's TIME in the unit.
local function server_now(unit)
  local time = redis.call('TIME')
  local seconds = tonumber(time[1])
  if unit == 's' then
    return seconds
  elseif unit == 'ms' then
    return seconds * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  return seconds * 1000000 + tonumber(time[2])
end

-- ttl_ms is the PEXPIRE of a state fresh after `duration` in the unit:
-- whole milliseconds, rounded up, within [1, 2^52], as text.
local function ttl_ms(unit, duration)
  local ms = duration
  if unit == 'us' then
    -- ceil(duration / 1000), exactly: the float quotient is floor or
    -- floor + 1.
    ms = math.floor(duration / 1000)
    if ms * 1000 > duration then
      ms = ms - 1
    end
    if ms * 1000 < duration then
      ms = ms + 1
    end
  elseif unit == 's' then
    ms = duration * 1000
  end
  if ms > MAX_TIME then
    ms = MAX_TIME
  elseif ms < 1 then
    ms = 1
  end
  return string.format('%d', ms)
end

-- rare returns the helpers of the uncommon paths, a refused call and a
-- reset: helpers.refuse and helpers.fresh below. A script (EVALSHA) builds
-- every local function of its text again on each call, and building these
-- two was a measurable part of a common call's cost; built by rare() when
-- one is needed, they cost the common call one function.
local function rare()
  local helpers = {}

  -- refuse is the error reply for a call whose KEYS, ARGV[1..4] or number
  -- of limit arguments are wrong, naming its first wrong argument; or,
  -- given i, for the bad limit argument ARGV[i]: the limit's field `name`
  -- must be an integer in `range` (in words).
  function helpers.refuse(KEYS, ARGV, group, i, name, range)
    -- quote shows an argument: at most 40 bytes, control and non-ASCII
    -- bytes escaped.
    local function quote(value)
      if type(value) ~= 'string' then
        return 'nothing'
      end
      local shown = string.gsub(string.sub(value, 1, 40), '[^ -~]', function(byte)
        return string.format('\\x%02x', string.byte(byte))
      end)
      if #value > 40 then
        shown = shown .. '...'
      end
      return "'" .. shown .. "'"
    end
    local message
    if i then
      message = 'ARGV[' .. i .. '] (limit ' .. math.floor((i - 5) / group) + 1 .. ' ' .. name
        .. ') must be a canonical integer in ' .. range .. ', got ' .. quote(ARGV[i])
    elseif #KEYS ~= 1 then
      message = 'expected exactly 1 key (the state key), got ' .. #KEYS
    elseif integer(ARGV[1], -MAX_TIME, MAX_TIME) == nil then
      message = 'ARGV[1] eventCount must be a canonical integer in [-2^52, 2^52], got ' .. quote(ARGV[1])
    elseif ARGV[2] ~= 'ms' and ARGV[2] ~= 's' and ARGV[2] ~= 'us' then
      message = "ARGV[2] unit must be 's', 'ms' or 'us', got " .. quote(ARGV[2])
    elseif ARGV[3] ~= '' and integer(ARGV[3], 0, MAX_TIME) == nil then
      message = 'ARGV[3] now must be empty (server clock) or a canonical integer in [0, 2^52], got ' .. quote(ARGV[3])
    elseif ARGV[4] ~= '0' and ARGV[4] ~= '1' then
      message = "ARGV[4] mode must be '0' (count allowed events) or '1' (count every attempt), got " .. quote(ARGV[4])
    else
      message = 'expected 1 to ' .. MAX_LIMITS .. ' limits of ' .. group .. ' integers after ARGV[4], got '
        .. math.max(#ARGV - 4, 0) .. ' arguments'
    end
    return redis.error_reply('ERR ratelua: ' .. message)
  end

  -- fresh deletes the state and replies as for a fresh key: every limit
  -- admits, and remaining is the smallest limit maximum, the first integer
  -- of each limit's group in ARGV.
  function helpers.fresh(KEYS, ARGV, group)
    redis.call('DEL', KEYS[1])
    local remaining = tonumber(ARGV[5])
    for i = 5 + group, #ARGV, group do
      local maximum = tonumber(ARGV[i])
      if maximum < remaining then
        remaining = maximum
      end
    end
    return { 1, remaining, 0, 0, 0 }
  end

  return helpers
end
-- #end

-- reservation sets OP to 'reserve' or 'settle', and ID and LIFETIME to
-- numbers, when MODE (ARGV[4]) is 'reserve:<id>:<lifetime>' or
-- 'settle:<id>' with id and lifetime canonical integers in [1, 2^52];
-- else OP to nil. Only a mode other than '0' and '1' is parsed.
-- #define reservation(OP, ID, LIFETIME, MODE)
-- (Reserve, then settle: v7, issue 31, token_bucket and zset_log. Each
-- script that takes them defines MAX_RESERVATIONS.)
OP = nil
if type(MODE) == 'string' then
  local reservation_kind, reservation_id, reservation_life = string.match(MODE, '^(%l+):([1-9]%d*):([1-9]%d*)$')
  if reservation_kind ~= 'reserve' then
    reservation_kind, reservation_id = string.match(MODE, '^(%l+):([1-9]%d*)$')
    reservation_life = '1'
    if reservation_kind ~= 'settle' then
      reservation_kind = nil
    end
  end
  if reservation_kind == 'reserve' or reservation_kind == 'settle' then
    ID, LIFETIME = reservation_id + 0, reservation_life + 0
    if ID <= MAX_TIME and LIFETIME <= MAX_TIME then
      OP = reservation_kind
    end
  end
end
-- #end

-- reservation_refuse returns the error reply of a call whose first wrong
-- argument is its mode (ARGV[4], neither '0', '1' nor a reservation's),
-- or ARGV[1] for its reservation's operation OP (an estimate below 1, an
-- actual cost below 0); COUNT and NOW are ARGV[1] and ARGV[3] read (nil
-- when wrong). Else it does nothing: HELPERS.refuse names the argument.
-- #define reservation_refuse(HELPERS, OP, COUNT, NOW)
if #KEYS == 1 and COUNT ~= nil and NOW ~= nil and (ARGV[2] == 'ms' or ARGV[2] == 's' or ARGV[2] == 'us') then
  local reservation_shown = "'" .. string.gsub(string.sub(tostring(ARGV[4]), 1, 40), '[^ -~]', function(byte)
    return string.format('\\x%02x', string.byte(byte))
  end) .. "'"
  if #tostring(ARGV[4]) > 40 then
    reservation_shown = string.sub(reservation_shown, 1, -2) .. "...'"
  end
  if ARGV[4] == nil then
    reservation_shown = 'nothing'
  end
  if OP == 'reserve' and COUNT < 1 then
    return redis.error_reply('ERR ratelua: ARGV[1] estimate of a reserve must be a canonical integer in [1, 2^52], got '
      .. ARGV[1])
  elseif OP == 'settle' and COUNT < 0 then
    return redis.error_reply('ERR ratelua: ARGV[1] actual cost of a settle must be a canonical integer in [0, 2^52], got '
      .. ARGV[1])
  elseif OP == nil and ARGV[4] ~= '0' and ARGV[4] ~= '1' then
    return redis.error_reply("ERR ratelua: ARGV[4] mode must be '0' (count allowed events), '1' (count every attempt), "
      .. "'reserve:<id>:<lifetime>' or 'settle:<id>' (id and lifetime canonical integers in [1, 2^52]), got "
      .. reservation_shown)
  end
end
-- #end

-- no_reservation returns the error reply of a reserve or a settle (ARGV[4]
-- 'reserve:...' or 'settle:...') to a script that does not take them,
-- NAME, when the arguments before the mode are right (COUNT and NOW,
-- ARGV[1] and ARGV[3] read, are not nil); WHY says why. Else it does
-- nothing.
-- #define no_reservation(NAME, WHY, COUNT, NOW)
if #KEYS == 1 and COUNT ~= nil and NOW ~= nil and (ARGV[2] == 'ms' or ARGV[2] == 's' or ARGV[2] == 'us')
  and type(ARGV[4]) == 'string' and (string.find(ARGV[4], '^reserve:') or string.find(ARGV[4], '^settle:')) then
  return redis.error_reply("ERR ratelua: ARGV[4] mode must be '0' or '1': " .. NAME
    .. ' v7 does not take reserve or settle (' .. WHY .. '); token_bucket and zset_log do')
end
-- #end
