-- ratelua sliding_window v7: several <max, duration, resolution> limits over
-- time buckets, all in one hash.
--
-- KEYS[1]  the state key (the only key read or written)
-- ARGV[1]  eventCount: > 0 record that many events and decide; 0 decide
--          whether one more event would pass (records nothing: v7 writes
--          nothing, see below); < 0 delete the state and reply as for a
--          fresh key
-- ARGV[2]  unit of now and of every duration: 's', 'ms' or 'us'
-- ARGV[3]  now in that unit, or '' for the server clock (TIME)
-- ARGV[4]  mode: '0' a denied call records nothing in any limit;
--          '1' every call records its events, allowed or not;
--          v7: 'reserve:<id>:<lifetime>' or 'settle:<id>' (lua/README.md,
--          Reserve, then settle): ARGV[1] is the estimate of a reserve,
--          decided as mode '0' and held until now + lifetime, or the
--          actual cost of a settle, recorded at now once the estimate
--          left the bucket of the reserve's time (issue 32, below)
-- ARGV[5..] 1 to 16 limits of three integers:
--          max         events allowed in the window, 1..10^9
--          duration    the window in the unit, 1..2^52
--          resolution  bucket width in the unit, 1..duration;
--                      ceil(duration / resolution) <= 10000 buckets
-- reply    {allowed, remaining, retry_after, reset_after, limit_index}
--
-- Every integer is canonical decimal text: '0', or an optional '-' then a
-- digit 1-9 then digits ('-0', '+1', '007', ' 1', '1e3' are refused). Bad
-- input is an error reply 'ERR ratelua: ...' naming the argument, and
-- writes nothing.
--
-- Bucket b holds the events at times t with floor(t / resolution) = b. At
-- time now a limit counts the buckets b > floor((now - duration) /
-- resolution). Events are allowed when count + eventCount <= max for every
-- limit. Fresh means every count is 0; reset_after is the time until then.
-- The executable specification is internal/model/sliding_window.go.
--
-- State: a hash. Per limit i, a ring of N = ceil(duration / resolution)
-- buckets ends at the bucket of the last write, w = floor(time /
-- resolution); its non-empty buckets form a chain, oldest first.
-- Field "l" is ARGV[2] and ARGV[5..] joined by spaces, exactly as the call
-- that created the state sent them (a call with other limits or another
-- unit starts fresh; a call with the same ones need not check them again).
-- Field "m" is "<time> <events> <boundary> <room> <index> <reset>" then
-- " <total> <span> <newest>" per limit: time the last write in the unit;
-- per limit the events in its ring, w minus the oldest non-empty bucket,
-- and the count of bucket w ("0 0 0" for an empty ring), every bucket
-- before the oldest non-empty one having left the ring; and a summary of
-- the limits written by a call with several limits that records (all 0
-- otherwise, and when the summary alone would make "m" longer than 64
-- bytes, which would cost the hash its compact encoding): until
-- time <boundary> no limit's head or window edge moves, <room> is the
-- least of max - window over the limits, <index> the first limit with that
-- room, <reset> the latest w * resolution + duration. <events> counts the
-- events recorded since the summary, by quiet calls (allowed before the
-- boundary, all in every limit's bucket w), which the totals and newest
-- counts leave out. Bucket w lives in "m" only.
-- Field "<i>.<b mod N>" is "<b>:<count>:<step>" for a non-empty bucket b < w
-- of limit i, step being the distance to the next non-empty bucket (which
-- may be w); it is written once, when a write moves the limit's
-- newest bucket past b (the spill), and a field whose bucket has left the
-- ring, or is w's slot, is stale and ignored until reused. Two short fields
-- "l" and "m" keep a small hash in the server's compact encoding, where one
-- field holding both would not. A bucket's count is capped at max + 1 (mode
-- 1), which changes no reply. TTL: reset_after. A now earlier than the last
-- write is treated as the time of the last write. A call that records
-- nothing writes nothing (v7; v5 and v6 saved the advanced rings, HSET of
-- "m" alone, when more than 16 buckets left: a later call whose clock is
-- behind that call but not behind the last write then missed the events
-- of the buckets dropped, which its window still covers). The key must be
-- written by this script only.
--
-- What v6 does apart from v5: the replies are v5's; the state is not (state
-- version 6: v6 neither reads nor shares v5's state, the Go API's key names
-- the layout). "m" drops v5's <lag> (the ring's end minus w), which always
-- equalled what the oldest non-empty bucket implies (one limit: a write
-- formats four numbers, v5 five), and starts with the summary: with
-- several limits, an allowed call before the boundary (most calls of a
-- limiter busier than its buckets are narrow) parses six numbers and
-- writes two whatever the number of limits, where v5 parsed and wrote four
-- per limit.
-- The prelude's helpers and the script's own are macros or code in place,
-- so a call builds no closure (v5 built seven on every call) but a refused
-- call, a reset or the first write of a key (which build the error
-- helpers). The fast paths (one limit with locals, several in passes over
-- one table) now also take a call whose rings drop fewer than 1000 bucket
-- slots (one HMGET of those slots, dropped along the chain), with several
-- limits a call for which some limit's whole ring has left (that limit starts again, empty, with no
-- read), and a denied call that records nothing and is
-- over a limit by one event (it retries when the limit's oldest bucket
-- leaves the window: every bucket holds at least one event), where v5 ran
-- its general code (the denied one walking the chain). The general code is
-- v5's, on the new layout.

-- v7 also takes reserve and settle (issue 31): a key holding reservations
-- marks "l" (see the general code) and takes the general code only; a key
-- that never held one keeps the paths and the cost above. A reservation
-- holds its units until it is settled (issue 32): every check of a limit
-- counts, besides its window's buckets, the estimates held whose recorded
-- bucket has left the window; a settle takes the estimate out of that
-- bucket (where a window still counts it) and records the actual cost at
-- now; one found expired is settled with its estimate at its expiry.
-- Why no window admits more than max when a reservation's units are
-- admitted anywhere in [reserve, settle]: a check at time c counts every
-- reservation held at c in full (in its bucket, or by the hold), and one
-- settled (or expired) at s <= c in the bucket of s, which every window
-- holding one of its admissions (all at times <= s) and checked at c >= s
-- counts; so every check sees at least the admissions in its window, and
-- admits only what fits (internal/model, TestSlidingWindowHoldsUntilSettled).
-- What v7 does apart from v6 (issue 35; v7 is in development): the replies
-- are v6's; the state is v6's and two fields more, so it has a state
-- version of its own (7: v7 neither reads nor shares v6's state). A denied
-- call that records events in mode '0' and read no bucket field leaves a
-- memo of its reply, fields "d" and "e" (see the denial memo below): the
-- same denials that follow, while no limit's head or window edge moves,
-- read it in the first HMGET and reply from one match, whatever the number
-- of limits: the hammered key of the login case (every call denied) costs
-- about as much as with one limit. A peek never writes a memo. A call that
-- records nothing no longer saves the advanced rings (v6 did when more
-- than 16 buckets left, keeping the last write's time: a later call behind
-- it but not behind that write counted its window without the buckets
-- dropped, TestSlidingWindowSaveBehind): such calls read the buckets that
-- left again, until the next write.
-- #include _prelude.v7.lua

-- limits_error sets OUT to the error reply for the first bad limit of the n
-- in ARGV, or to nil when every limit is valid; HELPERS is the table the
-- macro rare declares (expand it first: only a call that checks its limits
-- builds them, a reset or the first write of a key).
-- #define limits_error(OUT, HELPERS)
OUT = nil
for i = 5, 2 + 3 * n, 3 do
  if HELPERS.integer(ARGV[i], 1, 1000000000) == nil then
    OUT = HELPERS.refuse(KEYS, ARGV, 3, i, 'max', '[1, 10^9]')
  elseif HELPERS.integer(ARGV[i + 1], 1, MAX_TIME) == nil then
    OUT = HELPERS.refuse(KEYS, ARGV, 3, i + 1, 'duration', '[1, 2^52]')
  elseif HELPERS.integer(ARGV[i + 2], 1, MAX_TIME) == nil then
    OUT = HELPERS.refuse(KEYS, ARGV, 3, i + 2, 'resolution', '[1, 2^52]')
  end
  if OUT then
    break
  end
end
if OUT == nil then
  for i = 5, 2 + 3 * n, 3 do
    local duration, resolution = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    if resolution > duration then
      OUT = redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3 .. ': resolution must be at most duration, got '
        .. string.format('%d > %d', resolution, duration))
      break
    end
    local r = duration % resolution
    if r < 0 then
      r = r + resolution
    elseif r >= resolution then
      r = r - resolution
    end
    local buckets = (duration - r) / resolution
    if r > 0 then
      buckets = buckets + 1
    end
    if buckets > 10000 then
      OUT = redis.error_reply('ERR ratelua: limit ' .. (i - 2) / 3
        .. ': duration / resolution must be at most 10000 buckets, got ' .. string.format('%d', buckets))
      break
    end
  end
end
-- #end

-- Floor division without a function call: for integers 0 <= a and
-- 0 < b with a + b <= 2^53, r = a % b (Lua: a - floor(a / b) * b, each step
-- exact) is the remainder give or take b, as the float quotient is floor or
-- floor + 1; after "if r < 0 then r = r + b elseif r >= b then r = r - b
-- end", r = a mod b and (a - r) / b = floor(a / b), exactly.


-- compact sets TEXT, the "m" of a call that records with several limits,
-- to "m" without the summary (its five numbers 0, as one limit writes)
-- when the summary alone would take "m" past 64 bytes, the servers'
-- default hash-max-listpack-value: a longer value turns the whole hash
-- into a hash table, about twice its memory (3 limits: 532 bytes against
-- 277). The calls that follow then take the fast paths (or the general
-- code) instead of the quiet case, with the same replies.
-- #define compact(TEXT, STAMP, NUMBERS, AT, LIMITS)
if #TEXT > 64 then
  local plain = format('%d 0 0 0 0 0' .. string.rep(' %d %d %d', LIMITS), STAMP, unpack(NUMBERS, AT + 1, AT + 3 * LIMITS))
  if #plain <= 64 then
    TEXT = plain
  end
end
-- #end
-- MAX_RESERVATIONS bounds the reservations one key holds (open, or
-- expired and not yet dropped): a reserve of a new id on a key holding
-- that many live ones is refused (v7).
local MAX_RESERVATIONS = 1000

-- predecessor sets P to the non-empty bucket before bucket TARGET on a
-- limit's chain, walked from its oldest bucket FIRST (< TARGET), and PC
-- and PS to its count and step; NAME and BUCKETS name the limit's fields
-- (v7: a refund unlinks a bucket it empties).
-- #define predecessor(P, PC, PS, TARGET, FIRST, NAME, BUCKETS)
P, PC, PS = FIRST, 0, 0
while true do
  local pred_b, pred_c, pred_s = match(redis.call('HGET', key, format(NAME, P % BUCKETS)) or '',
    '^(%d+):(%d+):(%d+)$')
  if pred_b == nil or pred_b + 0 ~= P or pred_s == '0' or P >= TARGET then
    error('ratelua: sliding_window state of ' .. key .. ' is inconsistent')
  end
  PC, PS = pred_c + 0, pred_s + 0
  if P + PS == TARGET then
    break
  end
  P = P + PS
end
-- #end

-- #call: what follows runs on every call (in ratelua_v7, the function body)
-- KEYS, ARGV and redis as locals: a global is a table lookup on every use
-- (about 150 instructions; a local, a register).
local KEYS, ARGV, redis = KEYS, ARGV, redis
local tonumber, format, match = tonumber, string.format, string.match
local count, now, n = 1, false, #ARGV - 4
if ARGV[1] ~= '1' then
  -- #expand integer(count, ARGV[1], -MAX_TIME, MAX_TIME)
end
if ARGV[3] ~= '' then
  -- #expand integer(now, ARGV[3], 0, MAX_TIME)
end
local unit, mode, key = ARGV[2], ARGV[4], KEYS[1]
-- A reservation's mode (v7, issue 31): parsed only when the mode is not '0'
-- or '1'. A reserve decides as mode '0'; least is the smallest ARGV[1] it
-- takes.
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
  or (mode ~= '0' and mode ~= '1') or n < 3 or n % 3 ~= 0 or n > 3 * MAX_LIMITS
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
n = n / 3
if count < 0 then
  -- #expand rare(helpers)
  local bad
  -- #expand limits_error(bad, helpers)
  return bad or helpers.fresh(KEYS, ARGV, 3)
end

-- The last write: its time, and per limit the ring's total, span, lag and
-- newest count, if it was written for these limits (checked then).
local limits
if n == 1 then
  limits = unit .. ' ' .. ARGV[5] .. ' ' .. ARGV[6] .. ' ' .. ARGV[7]
else
  limits = unit .. ' ' .. table.concat(ARGV, ' ', 5)
end
-- (One limit reads no memo, "d" and "e": only a call with several limits
-- writes one, and a missing field costs a scan of the whole hash.)
local stored
if n == 1 then
  stored = redis.pcall('HMGET', key, 'l', 'm')
else
  stored = redis.pcall('HMGET', key, 'l', 'm', 'd', 'e')
end
-- #expand wrong_type(stored, 'sliding_window')
local meta = stored[2]
-- Reserve, then settle (v7): a key holding reservations, or a refund's
-- empty newest bucket, marks "l" as "<limits> #<k>", k the reservation
-- fields it holds (see the general code). No fast path, quiet case or memo
-- matches a marked "l", and a reserve or a settle unmarks it for this call:
-- the general code takes them all (held: k, or false for a key unmarked).
-- (marked: "l" is this call's limits, marked or not.)
local held, lfield, marked = false, stored[1], false
if op or (lfield ~= limits and lfield) then
  if op then
    held = 0
  end
  if lfield == limits then
    stored[1], marked = false, true
  elseif lfield and string.sub(lfield, 1, #limits + 2) == limits .. ' #' then
    held, marked = tonumber(match(lfield, '^%d+', #limits + 3)) or 0, true
  end
end

-- The denial memo: a denied call that records events in mode '0', whose
-- reply came from "m" alone (no bucket field read), saves its reply in "e"
-- with a copy of "m" in "d": "<asked> <from> <until> <remaining> <retry>
-- <reset> <index>", the last three times after <from> (short: "e" stays
-- within 64 bytes). While "m" is that copy and 0 <= now - from < until (no
-- limit's head or window edge moves, and every denying limit's retry time
-- lies ahead), a call asking as many events that records nothing (mode
-- '0', or a peek) is denied with the same remaining and index,
-- retry_after <retry> - (now - from) (-1 stays -1) and reset_after
-- <reset> - (now - from) (at least 0): the hammered key of a login answers
-- from one match whatever its number of limits. Any write of "m" leaves
-- the memo stale.
if meta and stored[3] == meta and (count == 0 or mode == '0') and stored[1] == limits then
  local asked, from, to, remaining, retry, reset, index = match(stored[4] or '',
    '^(%d+) (%d+) (%d+) (%d+) (%-?%d+) (%-?%d+) (%d+)$')
  if asked then
    if not now then
      -- #expand server_now(now, unit)
    end
    local a = count
    if a < 1 then
      a = 1
    end
    from = now - from -- the time since the memo
    if asked + 0 == a and from >= 0 and from < to + 0 then
      if retry ~= '-1' then
        retry = retry - from
      end
      local reset_after = reset - from
      if reset_after < 0 then
        reset_after = 0
      end
      return { 0, remaining + 0, retry + 0, reset_after, index + 0 }
    end
  end
end

-- The quiet case, whatever the number of limits: the last write recorded
-- events (so every limit's newest bucket was its head then) and summed up
-- the rings in the head of "m": until time <boundary> no limit's head or
-- window edge moves, <room> more events fit in every limit, limit <index>
-- has the fewest left and <reset> - now is reset_after. A call before the
-- boundary that is allowed needs no limit's numbers: it adds its events to
-- <events>, the events recorded since the summary (which every limit's
-- total and newest count in "m" leave out), and rewrites the head of "m".
-- Only a call with several limits writes a summary (one limit's own path
-- costs no more than the quiet case would). The head of "m" is parsed
-- once, here, for every path that follows.
-- (index and reset are read, and the positions found, only by an allowed
-- quiet call: every capture costs every other call a string or a nested
-- match.) One limit's head is always "<time> 0 0 0 0 0": its own path
-- reads the whole of "m" in one match.
local time, events, boundary, room, at
local total1, span1, top1 -- one limit's ring
if meta and stored[1] == limits then
  if n == 1 then
    time, total1, span1, top1 = match(meta, '^(%d+) 0 0 0 0 0 (%d+) (%d+) (%d+)$')
  else
    time, events, boundary, room, at = match(meta, '^(%d+) (%d+) (%d+) (%-?%d+) %d+ %d+()')
  end
end
-- A state whose last write lies further ahead of now than the widest
-- window (and, for a caller's clock, of the server's TIME too) is stale:
-- written by a clock far ahead. It is forgotten here (meta nil), and the
-- general code below deletes it and counts from now. The common call pays
-- one comparison (a server-clock call reads TIME here, as it would below).
if time then
  local server = ARGV[3] == ''
  if not now then
    -- #expand server_now(now, unit)
  end
  local last = time + 0
  if last > now then
    local widest = 0
    for i = 6, #ARGV, 3 do
      local duration = ARGV[i] + 0
      if duration > widest then
        widest = duration
      end
    end
    local gone
    -- #expand stale(gone, last, now, widest, server, unit)
    if gone then
      meta, time, boundary, total1 = nil, nil, nil, nil
    end
  end
end
if boundary and boundary ~= '0' and room ~= '0' then
  local asked = count
  if asked < 1 then
    asked = 1
  end
  local from = #time + #events + 3 -- where <boundary> starts
  events = events + 0
  local left = room - events - asked
  if left >= 0 then
    if not now then
      -- #expand server_now(now, unit)
    end
    local stamp = now
    if time + 0 > now then
      stamp = time + 0
    end
    if stamp < boundary + 0 then
      local index, reset = match(meta, '^(%d+) (%d+)', from + #boundary + #room + 2)
      local reset_after = reset - now
      if reset_after > MAX_TIME then
        reset_after = MAX_TIME
      end
      if count > 0 then
        redis.call('HSET', key, 'm', format('%d %d %s', stamp, events + count, string.sub(meta, from)))
        local ttl
        -- #expand ttl_ms(ttl, unit, reset_after)
        redis.call('PEXPIRE', key, ttl)
        return { 1, left, 0, reset_after, index + 0 }
      end
      return { 1, left + 1, 0, reset_after, index + 0 }
    end
  end
end

-- One limit, the common case: the state was written for this limit, its
-- ring has not left, fewer than 1000 bucket slots leave it now (read in one
-- HMGET and dropped along the chain; a call that records nothing writes
-- nothing), the window needs no bucket but those
-- in "m" (no partly covered oldest bucket but the newest), and no retry has
-- to be found on the chain. Any other call goes on to the general code
-- below (which reads "m" again).
if n == 1 and time then
  local total, span, top = total1, span1, top1
  if total ~= '0' then
    -- (text + 0 is the number of a canonical integer without a call)
    local max, duration, resolution = ARGV[5] + 0, ARGV[6] + 0, ARGV[7] + 0
    local last = time + 0
    if not now then
      -- #expand server_now(now, unit)
    end
    local stamp = now
    if last > now then
      stamp = last
    end
    local part = duration % resolution
    if part < 0 then
      part = part + resolution
    elseif part >= resolution then
      part = part - resolution
    end
    local q = (duration - part) / resolution
    local buckets = q
    if part > 0 then
      buckets = q + 1
    end
    local into = stamp % resolution
    if into < 0 then
      into = into + resolution
    elseif into >= resolution then
      into = into - resolution
    end
    local head = (stamp - into) / resolution
    local w = last % resolution
    if w < 0 then
      w = w + resolution
    elseif w >= resolution then
      w = w - resolution
    end
    w = (last - w) / resolution
    local edge = head - buckets
    local first = w - span
    local low = head - q
    if into < part then
      low = low - 1
    end
    local partial = edge + 1
    total = total + 0
    top = top + 0
    local simple = w > edge and edge - first < 999
    if simple and edge >= first then
      -- Drop the buckets leaving the ring along the chain, oldest first:
      -- their slots, first to edge, read at once.
      local names = {}
      for b = first, edge do
        names[b - first + 1] = format('1.%d', b % buckets)
      end
      local read = redis.call('HMGET', key, unpack(names))
      local b = first
      while b <= edge do
        local v, bucket, c, step = read[b - first + 1], nil, nil, nil
        if v then
          bucket, c, step = match(v, '^(%d+):(%d+):(%d+)$')
        end
        if bucket == nil or bucket + 0 ~= b or step == '0' then
          break -- not a chain this script wrote: the general code decides
        end
        total = total - c
        b = b + step
      end
      simple = b > edge and b <= w
      first = b
    end
    if simple and not (low == partial and partial < w and partial >= first) then
      local wc = top + 0
      local window = total
      if low == partial and first == partial then
        window = total - wc -- partial == w: the ring holds bucket w alone
      end
      local asked = count
      if asked < 1 then
        asked = 1
      end
      local allowed = window + asked <= max
      local record = count > 0 and (allowed or mode == '1')
      -- A denied call that records nothing retries when its oldest bucket
      -- leaves the window (no walk) if that is enough: when the ring holds
      -- bucket w alone, or when one event too many is asked (window + asked
      -- = max + 1, the common denial: every bucket holds at least one).
      if allowed or asked > max or (not record and (first == w or window + asked == max + 1)) then
        if record then
          local current = 0
          local spilled = nil
          if w == head then
            current = wc
          else
            -- Spill bucket w to its field, linked to head.
            spilled = format('%d:%d:%d', w, wc, head - w)
          end
          local updated = current + count
          if updated > max + 1 then
            updated = max + 1
          end
          total = total + updated - current
          window = window + updated - current
          meta = format('%d 0 0 0 0 0 %d %d %d', stamp, total, head - first, updated)
          if spilled then
            redis.call('HSET', key, 'm', meta, format('1.%d', w % buckets), spilled)
          else
            redis.call('HSET', key, 'm', meta)
          end
          w = head
        end
        local reset_after = 0
        if window > 0 then
          reset_after = w * resolution + duration - now
          if reset_after > MAX_TIME then
            reset_after = MAX_TIME
          elseif reset_after < 0 then
            reset_after = 0
          end
        end
        if record then
          local ttl
          -- #expand ttl_ms(ttl, unit, reset_after)
          redis.call('PEXPIRE', key, ttl)
        end
        local left = max - window
        if left < 0 then
          left = 0
        end
        if allowed then
          return { 1, left, 0, reset_after, 1 }
        end
        if asked > max then
          return { 0, left, -1, reset_after, 1 }
        end
        local retry = first * resolution + duration - now
        if retry > MAX_TIME then
          retry = MAX_TIME
        elseif retry < 0 then
          retry = 0
        end
        return { 0, left, retry, reset_after, 1 }
      end
    end
  end
end

-- Several limits, the same common case for every limit, in passes over
-- the limits with the values of limit i in f[11 * (i - 1) + 1 .. + 11]:
-- max, duration, resolution, N, head, w, oldest, total, count of w, the
-- newest bucket out of the window (then the window count) and the index in
-- the read of the limit's first leaving slot (a call that records finds
-- the summary's times then: a denial needs none of them). The slots leaving every
-- ring, fewer than 1000 in all, are read in one HMGET (a call that records
-- nothing writes nothing). Any limit
-- outside the common case sends the call to the general code.
if n > 1 and time then
  do
    local last = time + 0
    if events == '0' then
      events = 0 -- (a comparison of interned strings: no conversion)
    else
      events = events + 0
    end
    if not now then
      -- #expand server_now(now, unit)
    end
    local stamp = now
    if last > now then
      stamp = last
    end
    local asked = count
    if asked < 1 then
      asked = 1
    end
    local f = {
      nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
      nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
      nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
    }
    local names, reads = nil, 0
    local simple = true
    local j = 0
    for arg = 5, 2 + 3 * n, 3 do
      local total, span, top
      total, span, top, at = match(meta, '^ (%d+) (%d+) (%d+)()', at)
      if total == nil or total == '0' then
        simple = false
        break
      end
      local max, duration, resolution = ARGV[arg] + 0, ARGV[arg + 1] + 0, ARGV[arg + 2] + 0
      local part = duration % resolution
      if part < 0 then
        part = part + resolution
      elseif part >= resolution then
        part = part - resolution
      end
      local q = (duration - part) / resolution
      local buckets = q
      if part > 0 then
        buckets = q + 1
      end
      local into = stamp % resolution
      if into < 0 then
        into = into + resolution
      elseif into >= resolution then
        into = into - resolution
      end
      local head = (stamp - into) / resolution
      local w = last % resolution
      if w < 0 then
        w = w + resolution
      elseif w >= resolution then
        w = w - resolution
      end
      w = (last - w) / resolution
      local edge = head - buckets
      local first = w - span
      if w <= edge then
        -- The whole ring has left: the limit starts again at head, empty
        -- (no read; its stale fields are ignored until reused).
        w, first, total, top = head, head, 0, 0
      elseif reads + edge - first >= 999 then
        simple = false
        break
      else
        total, top = total + events, top + events
      end
      local low = head - q
      if into < part then
        low = low - 1
      end
      f[j + 1], f[j + 2], f[j + 3], f[j + 4], f[j + 5], f[j + 6] = max, duration, resolution, buckets, head, w
      f[j + 7], f[j + 8], f[j + 9], f[j + 10], f[j + 11] = first, total, top, low, reads + 1
      if edge >= first then
        names = names or {}
        local i = j / 11 + 1
        for b = first, edge do
          reads = reads + 1
          names[reads] = format('%d.%d', i, b % buckets)
        end
      end
      j = j + 11
    end
    if simple and at == #meta + 1 then
      local read = names and redis.call('HMGET', key, unpack(names, 1, reads))
      local allowed, never, walk = true, false, false
      for o = 0, j - 11, 11 do
        local max, head, w, first, total = f[o + 1], f[o + 5], f[o + 6], f[o + 7], f[o + 8]
        local edge = head - f[o + 4]
        if edge >= first then
          -- Drop the buckets leaving the ring along the chain.
          local from, b = f[o + 11] - first, first
          while b <= edge do
            local v, bucket, c, step = read[from + b], nil, nil, nil
            if v then
              bucket, c, step = match(v, '^(%d+):(%d+):(%d+)$')
            end
            if bucket == nil or bucket + 0 ~= b or step == '0' then
              break -- not a chain this script wrote: the general code decides
            end
            total = total - c
            b = b + step
          end
          if b <= edge or b > w then
            simple = false
            break
          end
          first = b
          f[o + 7], f[o + 8] = first, total
        end
        local low, partial = f[o + 10], edge + 1
        if low == partial and partial < w and partial >= first then
          simple = false
          break
        end
        local window = total
        if low == partial and first == partial then
          window = total - f[o + 9] -- partial == w: the ring holds bucket w alone
        end
        f[o + 10] = window
        if window + asked > max then
          allowed = false
        end
        if asked > max then
          never = true
        elseif window + asked > max + 1 and first ~= w then
          walk = true -- its retry needs the chain
        end
      end
      -- A denied call needs no retry walk when some limit can never admit
      -- `asked` events (retry_after is -1 and that limit decides), or when
      -- it records nothing and every limit over its max holds bucket w
      -- alone or is over by one event (it retries when its oldest bucket
      -- leaves the window).
      local record = count > 0 and (allowed or mode == '1')
      if simple and (allowed or never or not (walk or record)) then
        local written = { 'm', false } -- HSET's arguments
        local h = 2
        local mb = 11 * n -- f[mb + 1 .. mb + 3 * n]: the meta words
        local remaining, retry, reset_after, index = nil, 0, 0, 1
        -- The summary of a call that records (see the quiet case).
        local boundary, room, least, reset = MAX_TIME * 2, nil, 1, 0
        -- A denial that read no bucket field leaves a memo (see above):
        -- until the first head or window edge move, or the first denying
        -- limit's retry time; with the latest retry and reset times.
        local memo = not allowed and count > 0 and mode == '0' and names == nil
        local soonest, latest, reset_at = MAX_TIME * 2, 0, 0
        for i = 1, n do
          local o = 11 * (i - 1)
          local max, duration, resolution, buckets, head = f[o + 1], f[o + 2], f[o + 3], f[o + 4], f[o + 5]
          local w, first, total, wc, window = f[o + 6], f[o + 7], f[o + 8], f[o + 9], f[o + 10]
          if memo then
            local moves = head * resolution
            if stamp - moves < duration - (buckets - 1) * resolution then
              moves = moves + duration - (buckets - 1) * resolution
            else
              moves = moves + resolution
            end
            if moves < soonest then
              soonest = moves
            end
            if window + asked > max and asked <= max then
              local at = first * resolution + duration
              if at < soonest then
                soonest = at
              end
              if at > latest then
                latest = at
              end
            end
            if window > 0 and w * resolution + duration > reset_at then
              reset_at = w * resolution + duration
            end
          end
          if record then
            local current = 0
            if w == head then
              current = wc
            else
              -- Spill bucket w to its field, linked to head.
              written[h + 1] = format('%d.%d', i, w % buckets)
              written[h + 2] = format('%d:%d:%d', w, wc, head - w)
              h = h + 2
            end
            wc = current + count
            if wc > max + 1 then
              wc = max + 1
            end
            total = total + wc - current
            window = window + wc - current
            w = head
            -- The head moves at (head + 1) * resolution, the window's edge
            -- at head * resolution + the width of its oldest bucket.
            local moves = head * resolution
            local oldest = duration - (buckets - 1) * resolution
            if stamp - moves < oldest then
              moves = moves + oldest
            else
              moves = moves + resolution
            end
            if moves < boundary then
              boundary = moves
            end
            if room == nil or max - window < room then
              room, least = max - window, i
            end
            if head * resolution + duration > reset then
              reset = head * resolution + duration
            end
          end
          if window > 0 then
            local reset = w * resolution + duration - now
            if reset > MAX_TIME then
              reset = MAX_TIME
            end
            if reset > reset_after then
              reset_after = reset
            end
          end
          local left = max - window
          if left < 0 then
            left = 0
          end
          if remaining == nil or left < remaining then
            remaining = left
            if allowed then
              index = i
            end
          end
          if not allowed and retry ~= -1 then
            if asked > max then
              retry, index = -1, i
            elseif window + asked > max then
              local r = first * resolution + duration - now
              if r > MAX_TIME then
                r = MAX_TIME
              end
              if r > retry then
                retry, index = r, i
              end
            end
          end
          local a = mb + 3 * i
          f[a - 2], f[a - 1], f[a] = total, w - first, wc
        end
        if record then
          written[2] = format('%d 0 %d %d %d %d' .. string.rep(' %d %d %d', n), stamp, boundary, room, least, reset,
            unpack(f, mb + 1, mb + 3 * n))
          -- #expand compact(written[2], stamp, f, mb, n)
          redis.call('HSET', key, unpack(written, 1, h))
          local ttl
          -- #expand ttl_ms(ttl, unit, reset_after)
          redis.call('PEXPIRE', key, ttl)
        elseif memo and stamp < soonest and latest - now <= MAX_TIME and reset_at - now <= MAX_TIME then
          local at = -1
          if retry ~= -1 then
            at = retry + now - stamp
          end
          local e = format('%d %d %d %d %d %d %d', asked, stamp, soonest - stamp, remaining, at, reset_at - stamp, index)
          if #e <= 64 then
            redis.call('HSET', key, 'd', meta, 'e', e)
          end
        end
        if allowed then
          return { 1, remaining, 0, reset_after, index }
        end
        return { 0, remaining, retry, reset_after, index }
      end
    end
  end
end

-- Offsets of a limit's values in the table t (see below).
local MAX, DURATION, RESOLUTION, BUCKETS, WHOLE, PART, TOTAL, SPAN, BOUNDARY, HEAD = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
local LOW, NEWEST, OLDEST, LEAVING, LEAVING_AT, WINDOW, NEWEST_COUNT = 11, 12, 13, 14, 15, 16, 17
local PARTIAL_VALUE, FIELD_FORMAT, EXTRA = 18, 19, 20

-- One flat table t. Limit i owns t[o + MAX .. o + FIELD_FORMAT],
-- o = 20 * (i - 1): MAX, DURATION, RESOLUTION; BUCKETS, N; WHOLE and PART,
-- floor(duration / resolution) and duration mod resolution; TOTAL, SPAN
-- and NEWEST_COUNT, the ring's meta words; HEAD, the bucket of the
-- decision's time; LOW, the newest bucket out of the window; NEWEST, the
-- newest non-empty bucket w (false: empty ring); OLDEST, the oldest
-- non-empty bucket (false: empty ring); LEAVING, the first bucket leaving
-- the ring, and LEAVING_AT the index of its field in the read; WINDOW, the
-- window count; PARTIAL_VALUE, the read value of the partly covered oldest
-- bucket when it is not w (false: not read); FIELD_FORMAT, the format of the
-- limit's field names, '<i>.%d' (nil until needed; string.format is cheaper
-- than concatenating numbers).
-- After them (base = 20 * n): the fields read, then the fields written, the
-- meta words and the fields read ahead on a chain. The constructor sizes the
-- array part for one limit at once (growing a table rehashes it).
local t = {
  nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
  nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
}

local last, at, events = nil, nil, 0
if meta and (stored[1] == limits or marked) then
  last, events, at = match(meta, '^(%d+) (%d+) %d+ %-?%d+ %d+ %d+()')
  events = events and events + 0 or 0
end
local checked = false
if last == nil then
  -- A fresh key, or one written for other limits: the limits are checked,
  -- each by one find of its three integers joined by spaces (canonical,
  -- 1 or more) and arithmetic (max <= 10^9, resolution <= duration <=
  -- 2^52, at most 10000 buckets: duration <= 10000 * resolution, exact or
  -- far off below 2^53). Only a limit that fails builds the rare helpers,
  -- whose limits_error names it (issue 35: they cost about 5k
  -- instructions a limit more, and their table and functions about 2k).
  -- The numbers read go into t, where the loop below takes them (checked).
  local valid = true
  for i = 5, 2 + 3 * n, 3 do
    local m, d, r = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    valid = false
    if string.find(m .. ' ' .. d .. ' ' .. r, '^[1-9]%d* [1-9]%d* [1-9]%d*$') then
      m, d, r = m + 0, d + 0, r + 0
      valid = m <= 1000000000 and d <= MAX_TIME and r <= d and d <= 10000 * r
      local o = (i - 5) / 3 * 20
      t[o + MAX], t[o + DURATION], t[o + RESOLUTION] = m, d, r
    end
    if not valid then
      break
    end
  end
  checked = valid
  if not valid then
    -- #expand rare(helpers)
    local bad
    -- #expand limits_error(bad, helpers)
    if bad then
      return bad
    end
  end
end
local last_o = 20 * (n - 1)
for o = 0, last_o, 20 do
  local duration, resolution = t[o + DURATION], t[o + RESOLUTION]
  if not checked then
    local arg = 5 + o / 20 * 3
    duration, resolution = ARGV[arg + 1] + 0, ARGV[arg + 2] + 0
    t[o + MAX], t[o + DURATION], t[o + RESOLUTION] = ARGV[arg] + 0, duration, resolution
  end
  local r = duration % resolution
  if r < 0 then
    r = r + resolution
  elseif r >= resolution then
    r = r - resolution
  end
  local q = (duration - r) / resolution
  local buckets = q
  if r > 0 then
    buckets = q + 1
  end
  t[o + BUCKETS], t[o + WHOLE], t[o + PART] = buckets, q, r
  if last then
    local total, span, newest
    total, span, newest, at = match(meta, '^ (%d+) (%d+) (%d+)()', at)
    if total == nil then
      last = nil
    else
      t[o + TOTAL], t[o + SPAN], t[o + NEWEST_COUNT] = total + events, span + 0, newest + events
    end
  end
end
if last and at == #meta + 1 then
  last = last + 0
else
  last = nil
end
if (meta or stored[1]) and last == nil then
  redis.call('DEL', key) -- written for other limits
end
if not now then
  -- #expand server_now(now, unit)
end
-- A marked key is stale as any other (see the quiet case): deleted with
-- its reservations.
if held and last ~= nil and last > now then
  local widest = 0
  for i = 6, #ARGV, 3 do
    local duration = ARGV[i] + 0
    if duration > widest then
      widest = duration
    end
  end
  local gone, server = nil, ARGV[3] == ''
  -- #expand stale(gone, last, now, widest, server, unit)
  if gone then
    redis.call('DEL', key)
    last, lfield = nil, nil
    if held then
      held = 0
    end
  end
end
if held and last == nil then
  held = 0 -- the key's state and reservations are gone
  if not op then
    held = false
  end
end
local stamp = now
if last ~= nil and last > now then
  stamp = last
end
-- The reservations a marked key holds (v7, issue 32): "l" goes on with
-- " <id>:<expiry>:<estimate>:<stamp>" per reservation, <stamp> the time it
-- was recorded at; live while now < expiry. hold is the live ones, four
-- numbers each (hold[nh - 3 .. nh] the last), gone the expired ones (as
-- <expiry>, <estimate>, <stamp>), which this call finds: each is settled
-- with its estimate at its expiry (or the last write, if later) below.
-- A reserve of a live id (retried) records nothing and replies as
-- admitted, read as a peek; a settle of an id not live applies nothing and
-- replies as a peek with retry_after -1 and limit_index 0; a settle of a
-- live one takes its estimate out of the bucket of <stamp> in every limit
-- whose window still counts it and records the actual cost at stamp
-- (never denied).
local hold, nh, gone, ng, estimate, rstamp, retried = nil, 0, nil, 0, nil, nil, false
if held and held > 0 then
  hold, gone = {}, {}
  for rid, x, e, r in string.gmatch(lfield, ' (%d+):(%d+):(%d+):(%d+)') do
    rid, x, e, r = rid + 0, x + 0, e + 0, r + 0
    if x <= now then
      ng = ng + 3
      gone[ng - 2], gone[ng - 1], gone[ng] = x, e, r
    elseif op and rid == id then
      estimate, rstamp = e, r -- the op's reservation, live
      if op == 'reserve' then
        nh = nh + 4
        hold[nh - 3], hold[nh - 2], hold[nh - 1], hold[nh] = rid, x, e, r
      end
    else
      nh = nh + 4
      hold[nh - 3], hold[nh - 2], hold[nh - 1], hold[nh] = rid, x, e, r
    end
  end
end
if op == 'reserve' then
  if estimate then
    retried, count = true, 0
  elseif nh >= 4 * MAX_RESERVATIONS then
    return redis.error_reply('ERR ratelua: KEYS[1] holds ' .. MAX_RESERVATIONS .. ' open reservations, the most'
      .. ' a key holds: settle or cancel one, or wait for its lifetime to pass, before ARGV[4] reserves another')
  end
elseif op and not estimate then
  count = 0
end

-- Advance every ring to stamp: name the buckets leaving it and the partly
-- covered oldest bucket (the newest bucket is in the meta), to read them at
-- once.
local base = 20 * n
local m = 0
for o = 0, last_o, 20 do
  local resolution, buckets = t[o + RESOLUTION], t[o + BUCKETS]
  local into = stamp % resolution
  if into < 0 then
    into = into + resolution
  elseif into >= resolution then
    into = into - resolution
  end
  local head = (stamp - into) / resolution
  local low = head - t[o + WHOLE]
  t[o + BOUNDARY] = (head + 1) * resolution
  if into < t[o + PART] then
    low = low - 1
    t[o + BOUNDARY] = head * resolution + t[o + PART]
  end
  local edge = head - buckets
  local written, first = false, false
  if last ~= nil and t[o + TOTAL] > 0 then
    local w = last % resolution
    if w < 0 then
      w = w + resolution
    elseif w >= resolution then
      w = w - resolution
    end
    w = (last - w) / resolution
    -- The whole ring, up to w, has left when w <= edge.
    if w > edge then
      written, first = w, w - t[o + SPAN]
      -- Every bucket before the oldest non-empty one has been dropped.
      local lo = first
      t[o + LEAVING], t[o + LEAVING_AT] = lo, m + 1
      local partial = edge + 1
      local partly = low == partial and partial < w and partial >= first
      if edge >= lo or partly then
        local name = format('%d.%%d', o / 20 + 1)
        t[o + FIELD_FORMAT] = name
        if edge >= lo then
          for b = lo, edge do
            m = m + 1
            t[base + m] = format(name, b % buckets)
          end
        end
        if partly then
          m = m + 1
          t[base + m] = format(name, partial % buckets)
        end
      end
    end
  end
  if not written then
    t[o + TOTAL] = 0
  end
  t[o + HEAD], t[o + LOW], t[o + NEWEST], t[o + OLDEST] = head, low, written, first
end
-- vals[vb + j] is the value of the j-th field named.
local vals, vb = t, base
if m > 0 then
  if m <= 1000 then
    vals, vb = redis.call('HMGET', key, unpack(t, base + 1, base + m)), 0
  else
    for f = 1, m, 1000 do
      local e = f + 999
      if e > m then
        e = m
      end
      local read = redis.call('HMGET', key, unpack(t, base + f, base + e))
      for j = f, e do
        t[base + j] = read[j - f + 1]
      end
    end
  end
end

-- Drop the leaving buckets (all older than w), walking the chain from its
-- oldest bucket; count each window and decide.
local asked = count
if asked < 1 then
  asked = 1
end
local allowed = true
for o = 0, last_o, 20 do
  local total, written, first = t[o + TOTAL], t[o + NEWEST], t[o + OLDEST]
  if written then
    local low, edge, lo, at = t[o + LOW], t[o + HEAD] - t[o + BUCKETS], t[o + LEAVING], t[o + LEAVING_AT]
    local ahead = edge - lo + 1
    if ahead < 0 then
      ahead = 0
    end
    local pv = false
    local partial = edge + 1
    if low == partial and partial < written and partial >= first then
      pv = vals[vb + at + ahead] or ''
    end
    t[o + PARTIAL_VALUE] = pv
    while first and first <= edge do
      local v = vals[vb + at + first - lo]
      local c, s = 0, 0
      if v then
        local b, vc, vs = match(v, '^(%d+):(%d+):(%d+)$')
        if b ~= nil and b + 0 == first then
          c, s = vc + 0, vs + 0
        end
      end
      total = total - c
      if s == 0 then
        first, written = false, false
      else
        first = first + s
      end
    end
    if total == 0 then
      -- (v7: what is left is the newest bucket, emptied by a refund.)
      first, written = false, false
    end
    t[o + TOTAL], t[o + NEWEST], t[o + OLDEST] = total, written, first
    if low == partial and first == partial then
      if partial == written then
        total = total - t[o + NEWEST_COUNT]
      else
        local b, vc = match(pv, '^(%d+):(%d+):%d+$')
        if b ~= nil and b + 0 == partial then
          total = total - vc
        end
      end
    end
  end
  t[o + WINDOW] = total
  if total + asked > t[o + MAX] then
    allowed = false
  end
end
-- v7 (issue 32): the reservation a settle names and the expired ones this
-- call found leave the buckets they were recorded in, in every limit
-- whose window still counts that bucket (never below 0, unlinking a
-- bucket they empty, written at once: the call is refused no more); the
-- expired ones are recorded in the bucket of their expiry (or of the last
-- write, if later), oldest first, in every limit whose window counts it.
if ng > 0 or (estimate and op == 'settle') then
  local rem, nr = {}, 0
  for j = 1, ng, 3 do
    nr = nr + 2
    rem[nr - 1], rem[nr] = gone[j + 2], gone[j + 1]
  end
  if estimate and op == 'settle' then
    nr = nr + 2
    rem[nr - 1], rem[nr] = rstamp, estimate
  end
  for q = 1, nr, 2 do
    local at, refund = rem[q], rem[q + 1]
    for o = 0, last_o, 20 do
      local i = o / 20 + 1
      local resolution, buckets = t[o + RESOLUTION], t[o + BUCKETS]
      local b = at % resolution
      if b < 0 then
        b = b + resolution
      elseif b >= resolution then
        b = b - resolution
      end
      b = (at - b) / resolution
      local written, first = t[o + NEWEST], t[o + OLDEST]
      if refund > 0 and written and b > t[o + LOW] and b >= first and b <= written then
        local name = t[o + FIELD_FORMAT] or format('%d.%%d', i)
        t[o + FIELD_FORMAT] = name
        local given = 0
        if b == written then
          given = t[o + NEWEST_COUNT]
          if given > refund then
            given = refund
          end
          t[o + NEWEST_COUNT] = t[o + NEWEST_COUNT] - given
        else
          local field = format(name, b % buckets)
          local v = redis.call('HGET', key, field)
          local vb, vc, vs = match(v or '', '^(%d+):(%d+):(%d+)$')
          if vb ~= nil and vb + 0 == b then
            vc, vs = vc + 0, vs + 0
            given = vc
            if given > refund then
              given = refund
            end
            if given < vc then
              redis.call('HSET', key, field, format('%d:%d:%d', b, vc - given, vs))
            else
              -- Emptied: unlinked from the chain (every bucket in it but the
              -- newest holds at least one event).
              redis.call('HDEL', key, field)
              if b == first then
                t[o + OLDEST] = b + vs
              else
                local p, pc, ps
                -- #expand predecessor(p, pc, ps, b, first, name, buckets)
                redis.call('HSET', key, format(name, p % buckets), format('%d:%d:%d', p, pc, ps + vs))
              end
            end
          end
        end
        t[o + TOTAL], t[o + WINDOW] = t[o + TOTAL] - given, t[o + WINDOW] - given
        t[o + PARTIAL_VALUE] = false
        if t[o + TOTAL] == 0 then
          t[o + NEWEST], t[o + OLDEST], t[o + NEWEST_COUNT] = false, false, 0
        end
      end
    end
  end
  if ng > 0 then
    local order = {}
    for j = 1, ng, 3 do
      order[#order + 1] = j
    end
    table.sort(order, function(x, y)
      return gone[x] < gone[y]
    end)
    for _, j in ipairs(order) do
      local at, units = gone[j], gone[j + 1]
      if at < last then
        at = last
      end
      for o = 0, last_o, 20 do
        local resolution, buckets = t[o + RESOLUTION], t[o + BUCKETS]
        local b = at % resolution
        if b < 0 then
          b = b + resolution
        elseif b >= resolution then
          b = b - resolution
        end
        b = (at - b) / resolution
        if b > t[o + LOW] then
          local written = t[o + NEWEST]
          if not written then
            t[o + NEWEST], t[o + OLDEST], t[o + NEWEST_COUNT], t[o + TOTAL] = b, b, units, units
          elseif b == written then
            t[o + NEWEST_COUNT], t[o + TOTAL] = t[o + NEWEST_COUNT] + units, t[o + TOTAL] + units
          else
            -- A later bucket: the newest one is spilled, linked to it.
            local name = t[o + FIELD_FORMAT] or format('%d.%%d', o / 20 + 1)
            t[o + FIELD_FORMAT] = name
            local wc = t[o + NEWEST_COUNT]
            if wc == 0 then
              local p, pc, ps
              local first = t[o + OLDEST]
              -- #expand predecessor(p, pc, ps, written, first, name, buckets)
              redis.call('HSET', key, format(name, p % buckets), format('%d:%d:%d', p, pc, ps + b - written))
            else
              redis.call('HSET', key, format(name, written % buckets), format('%d:%d:%d', written, wc, b - written))
            end
            t[o + NEWEST], t[o + NEWEST_COUNT], t[o + TOTAL] = b, units, t[o + TOTAL] + units
          end
          t[o + WINDOW] = t[o + WINDOW] + units
          t[o + PARTIAL_VALUE] = false
        end
      end
    end
  end
end
-- Rule 1 of issue 32: every limit counts, besides its window, the
-- reservations held whose bucket has left it (EXTRA); then the decision
-- again, and a settle's is the peek's that replies: asked 1 after the
-- actual cost, count, is recorded.
if nh > 0 then
  for o = 0, last_o, 20 do
    local resolution, low, extra = t[o + RESOLUTION], t[o + LOW], 0
    for j = 4, nh, 4 do
      local at = hold[j]
      local b = at % resolution
      if b < 0 then
        b = b + resolution
      elseif b >= resolution then
        b = b - resolution
      end
      if (at - b) / resolution <= low then
        extra = extra + hold[j - 1]
      end
    end
    t[o + EXTRA], t[o + WINDOW] = extra, t[o + WINDOW] + extra
  end
end
if estimate and op == 'settle' then
  allowed = true
  for o = 0, last_o, 20 do
    if t[o + WINDOW] + count + 1 > t[o + MAX] then
      allowed = false
    end
  end
  asked = 1
elseif held then
  allowed = true
  for o = 0, last_o, 20 do
    if t[o + WINDOW] + asked > t[o + MAX] then
      allowed = false
    end
  end
end
if retried then
  allowed = true
end
local reserves = op == 'reserve' and count > 0 and allowed
local record = (count > 0 and (allowed or mode == '1')) or (estimate and op == 'settle')
if ng > 0 and not record then
  record, count = true, 0 -- the conversions are written
end
-- A call that records nothing writes nothing, not even the advanced rings:
-- a later call whose clock is behind this one's but not behind the last
-- write would count without the buckets they dropped
-- (TestSlidingWindowSaveBehind).
if reserves then
  -- Held from now on (its units at head, in every window).
  hold = hold or {}
  nh = nh + 4
  hold[nh - 3], hold[nh - 2], hold[nh - 1], hold[nh] = id, now + lifetime, count, stamp
end

-- Record, and reply from the state after this call: when allowed, the limit
-- with the fewest remaining decides; when denied, the one with the longest
-- retry (never first); ties go to the lower index.
local k = base -- t[base + 1 .. k]: the fields written (the spilled buckets)
local mb = base + 2 * n -- t[mb + 1 .. mb + 3 * n]: the meta words
local rb = base + 5 * n -- t[rb + 1 ..]: the fields read ahead
local remaining, retry, reset_after, index = nil, 0, 0, 1
-- The summary of a call that records (see the quiet case).
local boundary, room, least, reset = MAX_TIME * 2, nil, 1, 0
-- v7: the latest expiry held, or stamp if later (the bucket a held
-- reservation leaves from when nothing else happens: one found expired is
-- settled at its expiry or the last write, at least stamp).
local latest = stamp
for j = 2, nh, 4 do
  if hold[j] > latest then
    latest = hold[j]
  end
end
for o = 0, last_o, 20 do
  local max, duration, resolution, buckets = t[o + MAX], t[o + DURATION], t[o + RESOLUTION], t[o + BUCKETS]
  local total, head, low, written, first, window = t[o + TOTAL], t[o + HEAD], t[o + LOW], t[o + NEWEST], t[o + OLDEST], t[o + WINDOW]
  local i = o / 20 + 1
  -- The newest bucket before this call, its count and its step (to head
  -- when this call records in a later bucket).
  local newest, wc, ws = written, t[o + NEWEST_COUNT], 0
  local top = wc -- the newest bucket's count after this call
  if record then
    local current = 0
    if written then
      if written == head then
        current = wc
      else
        -- Spill the previous newest bucket to its field, linked to head.
        ws = head - written
        local name = t[o + FIELD_FORMAT]
        if name == nil then
          name = format('%d.%%d', i)
          t[o + FIELD_FORMAT] = name
        end
        if wc == 0 then
          -- A refund emptied it (v7, a marked key, never the oldest: its
          -- ring would be empty): its predecessor links to head instead.
          local p, pc, ps
          -- #expand predecessor(p, pc, ps, written, first, name, buckets)
          redis.call('HSET', key, format(name, p % buckets), format('%d:%d:%d', p, pc, ps + ws))
          t[o + PARTIAL_VALUE] = false
          newest = false
        else
          t[k + 1], t[k + 2] = format(name, written % buckets), format('%d:%d:%d', written, wc, ws)
          k = k + 2
        end
      end
    end
    top = current + count
    if top > max + 1 then
      top = max + 1
      if held then
        -- v7, a marked key: refunds of at most max (the open reservations
        -- recorded in one bucket were admitted) may come out of the
        -- bucket; at 2 * max + 1 it still holds more than max after them.
        top = current + count
        if top > max + max + 1 then
          top = max + max + 1
        end
      end
    end
    total = total + top - current
    window = window + top - current
    written = head
    if not first then
      first = head
    end
    if t[o + BOUNDARY] < boundary then
      boundary = t[o + BOUNDARY]
    end
    if room == nil or max - window < room then
      room, least = max - window, i
    end
    if head * resolution + duration > reset then
      reset = head * resolution + duration
    end
  end

  local r = 0
  if asked > max then
    r = -1
  elseif not allowed and window + asked > max then
    -- The time at which enough of the oldest events have left the window
    -- for `asked` events to fit: walk the chain, reading up to 16 buckets
    -- ahead at a time (all but those already known).
    local excess = window + asked - max
    local partial = head - buckets + 1
    local name = t[o + FIELD_FORMAT] or format('%d.%%d', i)
    local b = first
    local from, to, read, digits = 0, -1, nil, nil
    -- v7: the units of the reservations held, per bucket in the window
    -- (they leave from the buckets of their expiries, below).
    local inb = nil
    if nh > 0 then
      inb = {}
      for j = 4, nh, 4 do
        local at = hold[j]
        local x = at % resolution
        if x < 0 then
          x = x + resolution
        elseif x >= resolution then
          x = x - resolution
        end
        x = (at - x) / resolution
        if x > low then
          -- (keyed by text: a large integer key would size a table's array)
          x = format('%d', x)
          inb[x] = (inb[x] or 0) + hold[j - 1]
        end
      end
    end
    while b do
      local c, s = 0, 0
      if record and b == head then
        c = top
      elseif b == newest then
        c, s = wc, ws
      else
        local v
        if b == partial and t[o + PARTIAL_VALUE] then
          v = t[o + PARTIAL_VALUE]
        else
          if b > to then
            from, to = b, b + 15
            if to > written then
              to = written
            end
            -- The names of consecutive slots share their stem, '<i>.' and
            -- all digits but the last (a concatenation is cheaper than
            -- string.format).
            digits = digits or { '0', '1', '2', '3', '4', '5', '6', '7', '8', '9' }
            local f, stem = rb, nil
            for x = from, to do
              local slot = x % buckets
              local d = slot % 10
              if stem == nil or d == 0 then
                if slot < 10 then
                  stem = string.sub(name, 1, -3)
                else
                  stem = format(name, (slot - d) / 10)
                end
              end
              if x ~= newest and not (record and x == head) then
                f = f + 1
                t[f] = stem .. digits[d + 1]
              end
            end
            read = redis.call('HMGET', key, unpack(t, rb + 1, f))
          end
          local j = b - from + 1
          if newest and newest >= from and newest < b then
            j = j - 1
          end
          v = read[j]
        end
        if v then
          local sb, vc, vs = match(v, '^(%d+):(%d+):(%d+)$')
          if sb ~= nil and sb + 0 == b then
            c, s = vc + 0, vs + 0
          end
        end
      end
      if b > low then
        if inb then
          c = c - (inb[format('%d', b)] or 0)
        end
        excess = excess - c
        if excess <= 0 then
          break
        end
      end
      if s ~= 0 then
        b = b + s
      elseif nh > 0 then
        b = false -- the held units next
      else
        -- Unreachable while the ring totals agree with the chain.
        error('ratelua: sliding_window state of ' .. key .. ' is inconsistent')
      end
    end
    if not b then
      -- v7: the reservations held, as settled at their expiries, soonest
      -- first.
      local order = {}
      for j = 4, nh, 4 do
        order[#order + 1] = j
      end
      table.sort(order, function(x, y)
        return hold[x - 2] < hold[y - 2]
      end)
      for _, j in ipairs(order) do
        excess = excess - hold[j - 1]
        if excess <= 0 then
          local at = hold[j - 2]
          if at < stamp then
            at = stamp -- (a clock behind the last write's)
          end
          b = at % resolution
          if b < 0 then
            b = b + resolution
          elseif b >= resolution then
            b = b - resolution
          end
          b = (at - b) / resolution
          break
        end
      end
    end
    r = b * resolution + duration - now
    if r > MAX_TIME then
      r = MAX_TIME
    elseif r < 0 then
      r = 0
    end
  end
  if window > 0 and nh > 0 then
    -- v7: the latest expiry held decides (its bucket is the newest of the
    -- view in which the held units leave from there).
    local at = latest
    local nb = at % resolution
    if nb < 0 then
      nb = nb + resolution
    elseif nb >= resolution then
      nb = nb - resolution
    end
    nb = (at - nb) / resolution
    local reset = nb * resolution + duration - now
    if reset > MAX_TIME then
      reset = MAX_TIME
    elseif reset < 0 then
      reset = 0
    end
    if reset > reset_after then
      reset_after = reset
    end
  elseif window > 0 then
    local nb = written
    if top == 0 and first ~= written then
      -- v7: the newest bucket emptied by a refund (a marked key): the
      -- newest one holding events decides.
      if newest and newest ~= written and wc > 0 then
        nb = newest
      else
        local p, pc, ps
        local name = t[o + FIELD_FORMAT] or format('%d.%%d', i)
        -- #expand predecessor(p, pc, ps, written, first, name, buckets)
        nb = p
      end
    end
    local reset = nb * resolution + duration - now
    if reset > MAX_TIME then
      reset = MAX_TIME
    elseif reset < 0 then
      reset = 0
    end
    if reset > reset_after then
      reset_after = reset
    end
  end
  local left = max - window
  if left < 0 then
    left = 0
  end
  if remaining == nil or left < remaining then
    remaining = left
    if allowed then
      index = i
    end
  end
  if not allowed and retry ~= -1 and (r == -1 or r > retry) then
    retry, index = r, i
  end
  if record then
    local a = mb + 3 * i
    if first then
      t[a - 2], t[a - 1], t[a] = total, written - first, top
    else
      t[a - 2], t[a - 1], t[a] = 0, 0, 0
    end
  end
end

-- Write what was recorded (a call that records nothing writes nothing).
if record then
  if n > 1 then
    meta = format('%d 0 %d %d %d %d' .. string.rep(' %d %d %d', n), stamp, boundary, room, least, reset,
      unpack(t, mb + 1, mb + 3 * n))
    -- #expand compact(meta, stamp, t, mb, n)
  else
    meta = format('%d 0 0 0 0 0' .. string.rep(' %d %d %d', n), stamp, unpack(t, mb + 1, mb + 3 * n))
  end
  if held then
    -- v7: a reserve or a settle, or a marked key. "l" stays marked while
    -- the key holds reservations or a limit's newest bucket is empty (a
    -- settle's) with others not: the fast paths take neither.
    local settled = (op == 'settle' and estimate) or ng > 0
    local mark = limits
    for a = mb + 3, mb + 3 * n, 3 do
      if t[a - 2] > 0 and t[a] == 0 then
        mark = false
      end
    end
    if nh > 0 or not mark then
      local parts = { limits, format(' #%d', nh / 4) }
      for j = 4, nh, 4 do
        parts[#parts + 1] = format(' %d:%d:%d:%d', hold[j - 3], hold[j - 2], hold[j - 1], hold[j])
      end
      mark = table.concat(parts)
    end
    if settled and nh == 0 and reset_after == 0 then
      redis.call('DEL', key) -- nothing left to remember
    else
      redis.call('HSET', key, 'l', mark, 'm', meta, unpack(t, base + 1, k))
      if settled then
        -- The denial memo dropped.
        redis.call('HDEL', key, 'd', 'e')
      end
      -- reset_after covers every reservation held until its expiry's
      -- bucket leaves the widest window.
      local ttl
      -- #expand ttl_ms(ttl, unit, reset_after)
      redis.call('PEXPIRE', key, ttl)
    end
  elseif last == nil then
    redis.call('HSET', key, 'l', limits, 'm', meta, unpack(t, base + 1, k))
  else
    redis.call('HSET', key, 'm', meta, unpack(t, base + 1, k))
  end
  if not held then
    local ttl
    -- #expand ttl_ms(ttl, unit, reset_after)
    redis.call('PEXPIRE', key, ttl)
  end
end
if op then
  if op == 'settle' and not estimate then
    return { 0, remaining, -1, reset_after, 0 }
  end
end
if allowed then
  return { 1, remaining, 0, reset_after, index }
end
return { 0, remaining, retry, reset_after, index }
