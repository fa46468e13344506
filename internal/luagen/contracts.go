package luagen

import "strings"

const manifestComment = "ratelua scripts: call by EVALSHA <sha1> 1 <state key> <ARGV...>; on NOSCRIPT, SCRIPT LOAD the file (or EVAL its text) and retry. " +
	"Or FUNCTION LOAD the library file on every master once and FCALL <function> 1 <state key> <ARGV...> (functions survive failovers and restarts). " +
	"Every reply is an array of five integers {allowed, remaining, retry_after, reset_after, limit_index}; " +
	"bad input is an error reply starting with 'ERR ratelua:' and writes nothing."

// contracts holds the contract in words of every script version, by
// "name.vN".
var contracts = map[string]Entry{
	"ar1.v5": {
		Keys: keys,
		Argv: append(append([]string{}, commonArgv...), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: max, decay, resolution",
			"max: events allowed in the decayed count, 1..10^9",
			"decay: in thousandths (2000 = halve), 1001..10^9; the count is divided by decay/1000 at every multiple of resolution",
			"resolution: the decay period, in the unit, 1..2^52",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"max",
			"decay",
			"resolution",
		},
		Reply:        reply,
		Fresh:        "every limit's decayed count is 0 (a count below 1/1000 of an event is 0)",
		State:        "with one limit, a string '<last write time> <count as %.17g>' in unit ms, '<last write time> <count> s' in unit s, '<last write time> <count> us' in unit us; the limits are not stored and every call checks them; a call with other limits in the same unit carries the count over, decayed from the stored time with its own decay and resolution; another unit or another number of limits starts fresh. With two or more limits, a string '<limits>|<last write time> <count per limit as %.17g>', <limits> = ARGV[2] and ARGV[5..] joined by spaces, as the call that wrote the state sent them (a call with other limits or another unit starts fresh; one with the same limits need not check them again; the key must be written by the script only)",
		StateVersion: 5,
		Cost:         "GET, SET per recorded decision; + TIME with the server clock; one limit's call checks its limits itself on every call (no limits text in the state)",
	},
	"ar1.v6": {
		Keys: keys,
		Argv: append(ar1V6Argv(), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: max, decay, resolution",
			"max: events allowed in the decayed count, 1..10^9",
			"decay: in thousandths (2000 = halve), 1001..10^9; the count is divided by decay/1000 at every multiple of resolution",
			"resolution: the decay period, in the unit, 1..2^52",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"max",
			"decay",
			"resolution",
		},
		Reply:        reply,
		Fresh:        "every limit's decayed count is 0 (a count below 1/1000 of an event is 0)",
		State:        "with one limit, the boundary index of the last write b = floor(time / resolution) and the count there: one integer b * 2^20 + count when the count is whole and below 2^20 and b < 2^33, else a string '<b>:<count as %.17g>' (a whole count as %d); the limits and the unit are not stored and every call checks the limits; a call with other max or decay carries the count over, decayed with its own decay; a call with another resolution reads the index as its own (reset the key first: a longer resolution puts the stored index ahead of now); another number of limits starts fresh. With two or more limits, a string '<limits>|<last write time> <count per limit as %.17g>', <limits> = ARGV[2] and ARGV[5..] joined by spaces, as the call that wrote the state sent them (a call with other limits or another unit starts fresh; one with the same limits need not check them again; the key must be written by the script only)",
		StateVersion: 6,
		Cost:         "GET, SET per recorded decision; + TIME with the server clock; one limit's call checks its limits itself on every call (no limits text in the state) and builds no function",
	},
	"concurrency.v5": {
		Keys: keys,
		Argv: []string{
			"ARGV[1] eventCount, a canonical integer in [-2^52, 2^52]; in mode '0': > 0 acquire that many slots as one lease and decide; 0 decide whether one more slot is free, writing nothing; < 0 drop every lease (the lease ids go on counting) and reply as for a fresh key (limit_index 0); in modes 'renew' and 'release': the slots of the lease as acquired, 1..10^6",
			commonArgv[1],
			commonArgv[2],
			"ARGV[4] mode: '0' acquire, decide or reset by eventCount (a denied acquire writes nothing); 'renew' extend the lease ARGV[7] to expire at now + lease (never earlier than it did); 'release' give the lease ARGV[7] back",
			"ARGV[5..] exactly one limit, the integers: max, lease (a key holds one set of leases: two limits are two keys, so two calls)",
			"max: slots held at once, 1..10^6",
			"lease: the lease time, in the unit, 1..2^52; a lease is held at now while its expiry > now, and an acquire or renew sets its expiry to now + lease",
			"ARGV[7] leaseId: in modes 'renew' and 'release' only, the lease id an acquire answered (limit_index), a canonical integer in [1, 2^52]",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		},
		Limit: []string{
			"max",
			"lease",
		},
		Reply: []string{
			"allowed: 1 if the slots were acquired (for 0: one slot is free), or the lease renewed or released; 0 if denied, or if the lease is not held (expired, released, dropped by a reset, or acquired with other slots)",
			"remaining: free slots after the call, max - held (>= 0)",
			"retry_after: 0 when allowed; for a denied acquire the smallest wait, in the unit, after which enough leases expire for eventCount slots (for 0: one) if nothing else happens; -1 if never (eventCount larger than max) and for a lease not held",
			"reset_after: the time, in the unit, until no lease is held if nothing else happens (see fresh)",
			"limit_index: the lease id (>= 1) of an acquired, renewed or released lease; 1 for a denied acquire and for eventCount 0 in mode '0' (the one limit decided); 0 after a reset and for a lease not held",
		},
		Fresh:        "no lease is held (the key may still hold the lease id counter until every lease it numbered has expired)",
		State:        "a sorted set: member '#' scored -<the last lease id handed out>; a lease of n slots is the members '<id>' and '<id>.2' .. '<id>.<n>', each scored by the lease's expiry in the unit; an acquire that is allowed drops the expired leases first. TTL: every acquire or renew sets it to the latest expiry (whole ms, rounded up), on a key that existed with PEXPIRE GT, so it never shortens: the counter outlives every lease it numbered and no id is handed out twice while its holder may think it holds it; a reset or a release keeps '#' and the TTL. The unit must not change for a key; max and lease may",
		StateVersion: 5,
		Cost:         "acquire allowed: ZCOUNT, ZREMRANGEBYSCORE, ZINCRBY, ZADD, ZRANGE of the last member, PEXPIRE; denied: ZCOUNT, ZRANGE of the last member, at most one ZRANGE BYSCORE LIMIT; 0: ZCOUNT and, with a lease held, ZRANGE; release: ZMSCORE, ZREM, ZCOUNT, ZRANGE; renew: ZMSCORE, ZADD XX GT, ZCOUNT, ZRANGE, PEXPIRE GT; a lease of n slots is n members, at most 2000 arguments to a command; + TIME with the server clock",
	},
	"concurrency.v6": {
		Keys: keys,
		Argv: []string{
			"ARGV[1] eventCount, a canonical integer in [-2^52, 2^52]; in mode '0': > 0 acquire that many slots as one lease and decide; 0 decide whether one more slot is free, writing nothing; < 0 drop every lease (the lease ids go on counting) and reply as for a fresh key (limit_index 0); in modes 'renew' and 'release': the slots of the lease as acquired, 1..10^6",
			commonArgv[1],
			"ARGV[3] now: a canonical integer in [0, 2^52] in that unit from the caller's clock, or '' to use the server's clock (TIME). A now earlier than the time of the key's last acquire or renewal counts as that time. The server's TIME is read with an empty now, and with a caller's now more than one lease time from that last write (or on a key without one): neither now nor the last write then counts later than TIME, so a caller clock far ahead cannot expire others' live leases, nor hold the key beyond the lease time. retry_after and reset_after count from the time the call was decided at",
			"ARGV[4] mode: '0' acquire, decide or reset by eventCount (a denied acquire writes nothing); 'renew' extend the lease ARGV[7] to expire at now + lease (never earlier than it did); 'release' give the lease ARGV[7] back",
			"ARGV[5..] exactly one limit, the integers: max, lease (a key holds one set of leases: two limits are two keys, so two calls)",
			"max: slots held at once, 1..10^6",
			"lease: the lease time, in the unit, 1..2^52; a lease is held at now while its expiry > now, and an acquire or renew sets its expiry to now + lease",
			"ARGV[7] leaseId: in modes 'renew' and 'release', the lease id an acquire answered (limit_index), a canonical integer in [1, 2^52]. In mode '0', optional: the id the caller chose for the lease it acquires, a canonical integer in [1, 2^52] (random, so that a caller that did not get the reply, its call cancelled or its connection lost, can release the lease by that id); an acquire naming the id of a live lease is refused. Without it the key's counter numbers the lease, skipping the ids live leases hold",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		},
		Limit: []string{
			"max",
			"lease",
		},
		Reply: []string{
			"allowed: 1 if the slots were acquired (for 0: one slot is free), or the lease renewed or released; 0 if denied, or if the lease is not held (expired, released, dropped by a reset, or acquired with other slots)",
			"remaining: free slots after the call, max - held (>= 0)",
			"retry_after: 0 when allowed; for a denied acquire the smallest wait, in the unit, after which enough leases expire for eventCount slots (for 0: one) if nothing else happens; -1 if never (eventCount larger than max) and for a lease not held",
			"reset_after: the time, in the unit, until no lease is held if nothing else happens (see fresh)",
			"limit_index: the lease id (>= 1) of an acquired, renewed or released lease; 1 for a denied acquire and for eventCount 0 in mode '0' (the one limit decided); 0 after a reset and for a lease not held",
		},
		Fresh:        "no lease is held (the key may still hold the lease id counter until every lease it numbered has expired)",
		State:        "a sorted set: member '#' scored -<the last lease id the counter handed out>; member '@' scored t - 2^53, t the time of the last acquire or renewal; a key of another type, or a sorted set with neither '#' nor '@', is another script's state: refused, left unchanged; a lease of n slots is the members '<id>' and '<id>.2' .. '<id>.<n>', each scored by the lease's expiry in the unit; an acquire that is allowed drops the expired leases first. TTL: every acquire or renew sets it to the latest expiry (whole ms, rounded up), on a key that existed with PEXPIRE GT, so it never shortens: the counter outlives every lease it numbered and no id is handed out twice while its holder may think it holds it; a reset or a release keeps '#' and the TTL. The unit must not change for a key; max and lease may",
		StateVersion: 5,
		Cost:         "every call: ZMSCORE of '#', '@' (and the lease's members), + EXISTS on a key without them; acquire allowed: ZCOUNT, ZREMRANGEBYSCORE, ZADD, ZRANGE of the last member, PEXPIRE, and with the counter's id one more ZADD; denied: ZCOUNT, ZRANGE of the last member, at most one ZRANGE BYSCORE LIMIT; 0: ZCOUNT and, with a lease held, ZRANGE; release: ZREM, ZCOUNT, ZRANGE; renew: ZADD XX GT, ZCOUNT, ZRANGE, PEXPIRE GT; reset: ZREMRANGEBYSCORE; a lease of n slots is n members, at most 2000 arguments to a command; + TIME with the server clock, and with a caller's now more than a lease time from the last write",
	},
	"sliding_window.v5": {
		Keys: keys,
		Argv: append(append([]string{}, commonArgv...), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: max, duration, resolution",
			"max: events allowed in the window, 1..10^9",
			"duration: the window, in the unit, 1..2^52",
			"resolution: the bucket width, in the unit, 1..duration; ceil(duration / resolution) <= 10000",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"max",
			"duration",
			"resolution",
		},
		Reply:        reply,
		Fresh:        "every limit counts 0 events: bucket b = floor(t / resolution) holds the events at time t, and at time now a limit counts the buckets b > floor((now - duration) / resolution)",
		State:        "a hash: field 'l' = <limits>, <limits> = ARGV[2] and ARGV[5..] joined by spaces, as the call that wrote the state sent them (a call with other limits or another unit starts fresh; one with the same limits need not check them again; the key must be written by the script only); field 'm' = '<last write time>' then ' <ring total> <span to the oldest non-empty bucket> <ring end lag> <count of the newest bucket>' per limit (the newest bucket, that of the last write, lives in 'm' only); field '<i>.<b mod N>' = '<b>:<count>:<step to the next non-empty bucket>' for an older non-empty bucket b of limit i (N = ceil(duration / resolution)), written when a write moves the limit's newest bucket past b",
		StateVersion: 5,
		Cost:         "HMGET, HSET of one field, PEXPIRE per recorded decision in the bucket of the last write, whatever the number of limits; one more field in the HSET per limit whose newest bucket moves; one more HMGET when buckets leave a ring or the oldest bucket is partly in the window; one more HMGET for a denied reply in the common case; reads grow with the buckets passed since the last call, not with the window; + TIME with the server clock",
	},
	"sliding_window.v6": {
		Keys: keys,
		Argv: append(staleV6Argv(), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: max, duration, resolution",
			"max: events allowed in the window, 1..10^9",
			"duration: the window, in the unit, 1..2^52",
			"resolution: the bucket width, in the unit, 1..duration; ceil(duration / resolution) <= 10000",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"max",
			"duration",
			"resolution",
		},
		Reply:        reply,
		Fresh:        "every limit counts 0 events: bucket b = floor(t / resolution) holds the events at time t, and at time now a limit counts the buckets b > floor((now - duration) / resolution)",
		State:        "a hash: field 'l' = <limits>, <limits> = ARGV[2] and ARGV[5..] joined by spaces, as the call that wrote the state sent them (a call with other limits or another unit starts fresh; one with the same limits need not check them again; the key must be written by the script only); field 'm' = '<last write time> <events> <boundary> <room> <index> <reset>' then ' <ring total> <span from the oldest non-empty bucket to the newest> <count of the newest bucket>' per limit (the newest bucket, that of the last write, lives in 'm' only; every bucket before the oldest non-empty one has left the ring); the head is a summary written by a call with several limits that records (all 0 otherwise, and where the summary alone would make 'm' longer than 64 bytes, the default hash-max-listpack-value): until time <boundary> no limit's newest bucket or window edge moves, <room> is the least max - window over the limits, <index> the first limit with that room, <reset> the latest newest bucket * resolution + duration, and <events> the events recorded since by calls allowed before the boundary, which then rewrite the head alone (the totals and newest counts leave them out); field '<i>.<b mod N>' = '<b>:<count>:<step to the next non-empty bucket>' for an older non-empty bucket b of limit i (N = ceil(duration / resolution)), written when a write moves the limit's newest bucket past b",
		StateVersion: 6,
		Cost:         "HMGET, HSET of one field, PEXPIRE per recorded decision in the bucket of the last write, whatever the number of limits (an allowed call before the summary's boundary parses and writes the six numbers of the summary alone); one more field in the HSET per limit whose newest bucket moves; one more HMGET when buckets leave a ring or the oldest bucket is partly in the window; one more HMGET for a denied reply that walks the chain (one recording its events, or over a limit by more than one event; a denied call over by one event retries when its oldest bucket leaves the window, without a read); reads grow with the buckets passed since the last call, not with the window; + TIME with the server clock",
	},
	"token_bucket.v5": {
		Keys: keys,
		Argv: append(append([]string{}, commonArgv...), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: capacity, refill_amount, refill_interval",
			"capacity: tokens in a full bucket, 1..10^9",
			"refill_amount: tokens added per refill_interval (continuously, exactly), 1..10^9",
			"refill_interval: in the unit, 1..2^52; capacity * refill_interval <= 2^50",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"capacity",
			"refill_amount",
			"refill_interval",
		},
		Reply:        reply,
		Fresh:        "every bucket is full (a fresh bucket is full); eventCount is the cost in tokens; in mode '1' a denied call still takes its tokens, down to -capacity",
		State:        "with one limit, a string '<last write time> <deficit>' in unit ms, '<last write time> <deficit> s' in unit s, '<last write time> <deficit> us' in unit us, deficit = (capacity - tokens) * refill_interval in [0, 2 * capacity * refill_interval]; the limits are not stored and every call checks them; a call with other limits in the same unit carries the state over, reading the same time and deficit under its own limits with the deficit clamped to 2 * capacity * refill_interval; another unit or another number of limits starts fresh. With two or more limits, a string '<limits>|<last write time> <tokens * refill_interval per limit>', <limits> = ARGV[2] and ARGV[5..] joined by spaces, as the call that wrote the state sent them (a call with other limits or another unit starts fresh; one with the same limits need not check them again; the key must be written by the script only)",
		StateVersion: 5,
		Cost:         "GET, SET per recorded decision; + TIME with the server clock; one limit's call checks its limits itself on every call (no limits text in the state)",
	},
	"token_bucket.v6": {
		Keys: keys,
		Argv: append(append([]string{}, tokenBucketV6Argv()...), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: capacity, refill_amount, refill_interval",
			"capacity: tokens in a full bucket, 1..10^9",
			"refill_amount: tokens added per refill_interval (continuously, exactly), 1..10^9",
			"refill_interval: in the unit, 1..2^52; capacity * refill_interval <= 2^50",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"capacity",
			"refill_amount",
			"refill_interval",
		},
		Reply:        reply,
		Fresh:        "every bucket is full (a fresh bucket is full); eventCount is the cost in tokens; in mode '1' a denied call still takes its tokens, down to -capacity",
		State:        "with one limit, one integer X = t * refill_amount + deficit written with '%d' (the server keeps it as an integer), t the writing call's now and deficit = (capacity - tokens) * refill_interval in [0, 2 * capacity * refill_interval]; at a later now the deficit is X - now * refill_amount clamped to [0, 2 * capacity * refill_interval]; when X would reach 2^53 (not exact), the text '<t> <deficit>' instead, read as the same line; the unit and the limits are not stored, every call checks the limits, and neither the unit nor the limits may change for a key (a call with other limits reads X under its own refill_amount and clamps to its own bounds: the same refill_amount keeps the time until full, and the same refill_interval too the missing tokens; another refill_amount, at times far from 0, reads as full when larger and as -capacity when smaller); a now earlier than the last write is not taken as its time: the deficit counts from now (denies earlier, never admits more: X never decreases, and a call that reads the deficit above 2 * capacity * refill_interval records nothing, even in mode '1'). A call with another number of limits starts fresh. With two or more limits, a string '<limits>|<last write time> <tokens * refill_interval per limit>', <limits> = ARGV[2] and ARGV[5..] joined by spaces, as the call that wrote the state sent them (a call with other limits or another unit starts fresh; one with the same limits need not check them again; a now earlier than the last write is treated as the time of that write; the key must be written by the script only)",
		StateVersion: 6,
		Cost:         "GET, SET per recorded decision; + TIME with the server clock; one limit's call checks its limits itself on every call (no limits text in the state) and builds no function",
	},
	"zset_log.v5": {
		Keys: keys,
		Argv: append(append([]string{}, commonArgv...), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: max, window",
			"max: events allowed in any window, 1..10^6",
			"window: in the unit, 1..2^52; at time now the events at times t > now - window count",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"max",
			"window",
		},
		Reply:        reply,
		Fresh:        "no event is inside any limit's window",
		State:        "a sorted set, one member per event scored by its time, named '<time>:<index>:<base>' (index numbers the key's events from 1, written as a length letter a-p then digits; base is the index of the oldest member kept when the event was added); only the newest max+1 events (largest max) inside the widest window are kept; the unit must not change for a key, the limits may",
		StateVersion: 3,
		Cost:         "ZRANGE of the newest event, per limit at most one ZCOUNT (one limit: one ZRANGE BYSCORE LIMIT 0 1 of the oldest event in the window; none for a window the newest event is not in, or when the set holds one event), ZADD, PEXPIRE per recorded decision, an occasional ZREMRANGEBYRANK, at most one ZRANGE per denied reply (none when its event is the newest, one of the call's, or, with one limit, the oldest in the window); + TIME with the server clock",
	},
	"zset_log.v6": {
		Keys: keys,
		Argv: append(staleV6Argv(), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: max, window",
			"max: events allowed in any window, 1..10^4 (v5: 10^6); a call adds or drops at most max + 1 members, so its work is bounded (about 10,000 members at most: a few milliseconds)",
			"window: in the unit, 1..2^52; at time now the events at times t > now - window count",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"max",
			"window",
		},
		Reply:        reply,
		Fresh:        "no event is inside any limit's window",
		State:        "a sorted set, one member per event scored by its time, named '<time>:<index>:<base>' (index numbers the key's events from 1, written as a length letter a-p then digits; base is the index of the oldest member kept when the event was added); only the newest max+1 events (largest max) inside the widest window are kept; the unit must not change for a key, the limits may",
		StateVersion: 3,
		Cost:         "ZRANGE of the newest event, per limit at most one count of its window (none for a window the newest event is not in, or when the set holds one event): ZCOUNT of the events at or before the window's start, an integer, except for one limit whose set is large enough for a denial, which reads the oldest event in the window (ZRANGE BYSCORE LIMIT 0 1) as v5 does; ZADD, PEXPIRE per recorded decision, an occasional ZREMRANGEBYRANK, at most one ZRANGE per denied reply (none when its event is the newest, one of the call's, or, with one limit, the oldest in the window when it was read); + TIME with the server clock; no function is built on a call",
	},
	"ar1.v7": {
		Keys: keys,
		Argv: append(ar1V6Argv(), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: max, decay, resolution",
			"max: events allowed in the decayed count, 1..10^9",
			"decay: in thousandths (2000 = halve), 1001..10^9; the count is divided by decay/1000 at every multiple of resolution",
			"resolution: the decay period, in the unit, 1..2^52",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"max",
			"decay",
			"resolution",
		},
		Reply:        reply,
		Fresh:        "every limit's decayed count is 0 (a count below 1/1000 of an event is 0)",
		State:        "with one limit, the boundary index of the last write b = floor(time / resolution) and the count there: one integer b * 2^20 + count when the count is whole and below 2^20 and b < 2^33, else a string '<b>:<count as %.17g>' (a whole count as %d); the limits and the unit are not stored and every call checks the limits; a call with other max or decay carries the count over, decayed with its own decay; a call with another resolution reads the index as its own (reset the key first: a longer resolution puts the stored index ahead of now); another number of limits starts fresh. With two or more limits, a string '<limits>|<last write time> <count per limit as %.17g>', <limits> = ARGV[2] and ARGV[5..] joined by spaces, as the call that wrote the state sent them (a call with other limits or another unit starts fresh; one with the same limits need not check them again; the key must be written by the script only)",
		StateVersion: 6,
		Cost:         "GET, SET per recorded decision; + TIME with the server clock; one limit's call checks its limits itself on every call (no limits text in the state) and builds no function",
	},
	"concurrency.v7": {
		Keys: keys,
		Argv: []string{
			"ARGV[1] eventCount, a canonical integer in [-2^52, 2^52]; in mode '0': > 0 acquire that many slots as one lease and decide; 0 decide whether one more slot is free, writing nothing; < 0 drop every lease (the lease ids go on counting) and reply as for a fresh key (limit_index 0); in modes 'renew' and 'release': the slots of the lease as acquired, 1..10^6",
			commonArgv[1],
			"ARGV[3] now: a canonical integer in [0, 2^52] in that unit from the caller's clock, or '' to use the server's clock (TIME). A now earlier than the time of the key's last acquire or renewal counts as that time. The server's TIME is read with an empty now, and with a caller's now more than one lease time from that last write (or on a key without one): neither now nor the last write then counts later than TIME, so a caller clock far ahead cannot expire others' live leases, nor hold the key beyond the lease time. retry_after and reset_after count from the time the call was decided at",
			"ARGV[4] mode: '0' acquire, decide or reset by eventCount (a denied acquire writes nothing); 'renew' extend the lease ARGV[7] to expire at now + lease (never earlier than it did); 'release' give the lease ARGV[7] back",
			"ARGV[5..] exactly one limit, the integers: max, lease (a key holds one set of leases: two limits are two keys, so two calls)",
			"max: slots held at once, 1..10^6",
			"lease: the lease time, in the unit, 1..2^52; a lease is held at now while its expiry > now, and an acquire or renew sets its expiry to now + lease",
			"ARGV[7] leaseId: in modes 'renew' and 'release', the lease id an acquire answered (limit_index), a canonical integer in [1, 2^52]. In mode '0', optional: the id the caller chose for the lease it acquires, a canonical integer in [1, 2^52] (random, so that a caller that did not get the reply, its call cancelled or its connection lost, can release the lease by that id); an acquire naming the id of a live lease is refused. Without it the key's counter numbers the lease, skipping the ids live leases hold",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		},
		Limit: []string{
			"max",
			"lease",
		},
		Reply: []string{
			"allowed: 1 if the slots were acquired (for 0: one slot is free), or the lease renewed or released; 0 if denied, or if the lease is not held (expired, released, dropped by a reset, or acquired with other slots)",
			"remaining: free slots after the call, max - held (>= 0)",
			"retry_after: 0 when allowed; for a denied acquire the smallest wait, in the unit, after which enough leases expire for eventCount slots (for 0: one) if nothing else happens; -1 if never (eventCount larger than max) and for a lease not held",
			"reset_after: the time, in the unit, until no lease is held if nothing else happens (see fresh)",
			"limit_index: the lease id (>= 1) of an acquired, renewed or released lease; 1 for a denied acquire and for eventCount 0 in mode '0' (the one limit decided); 0 after a reset and for a lease not held",
		},
		Fresh:        "no lease is held (the key may still hold the lease id counter until every lease it numbered has expired)",
		State:        "a sorted set: member '#' scored -<the last lease id the counter handed out>; member '@' scored t - 2^53, t the time of the last acquire or renewal; a key of another type, or a sorted set with neither '#' nor '@', is another script's state: refused, left unchanged; a lease of n slots is the members '<id>' and '<id>.2' .. '<id>.<n>', each scored by the lease's expiry in the unit; an acquire that is allowed drops the expired leases first. TTL: every acquire or renew sets it to the latest expiry (whole ms, rounded up), on a key that existed with PEXPIRE GT, so it never shortens: the counter outlives every lease it numbered and no id is handed out twice while its holder may think it holds it; a reset or a release keeps '#' and the TTL. The unit must not change for a key; max and lease may",
		StateVersion: 5,
		Cost:         "every call: ZMSCORE of '#', '@' (and the lease's members), + EXISTS on a key without them; acquire allowed: ZCOUNT, ZREMRANGEBYSCORE, ZADD, ZRANGE of the last member, PEXPIRE, and with the counter's id one more ZADD; denied: ZCOUNT, ZRANGE of the last member, at most one ZRANGE BYSCORE LIMIT; 0: ZCOUNT and, with a lease held, ZRANGE; release: ZREM, ZCOUNT, ZRANGE; renew: ZADD XX GT, ZCOUNT, ZRANGE, PEXPIRE GT; reset: ZREMRANGEBYSCORE; a lease of n slots is n members, at most 2000 arguments to a command; + TIME with the server clock, and with a caller's now more than a lease time from the last write",
	},
	"sliding_window.v7": {
		Keys: keys,
		Argv: append(slidingWindowV7Argv(), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: max, duration, resolution",
			"max: events allowed in the window, 1..10^9",
			"duration: the window, in the unit, 1..2^52",
			"resolution: the bucket width, in the unit, 1..duration; ceil(duration / resolution) <= 10000",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"max",
			"duration",
			"resolution",
		},
		Reply:        reservationReply(),
		Fresh:        "every limit counts 0 events: bucket b = floor(t / resolution) holds the events at time t, and at time now a limit counts the buckets b > floor((now - duration) / resolution)",
		State:        "a hash: field 'l' = <limits>, <limits> = ARGV[2] and ARGV[5..] joined by spaces, as the call that wrote the state sent them (a call with other limits or another unit starts fresh; one with the same limits need not check them again; the key must be written by the script only); field 'm' = '<last write time> <events> <boundary> <room> <index> <reset>' then ' <ring total> <span from the oldest non-empty bucket to the newest> <count of the newest bucket>' per limit (the newest bucket, that of the last write, lives in 'm' only; every bucket before the oldest non-empty one has left the ring); the head is a summary written by a call with several limits that records (all 0 otherwise, and where the summary alone would make 'm' longer than 64 bytes, the default hash-max-listpack-value): until time <boundary> no limit's newest bucket or window edge moves, <room> is the least max - window over the limits, <index> the first limit with that room, <reset> the latest newest bucket * resolution + duration, and <events> the events recorded since by calls allowed before the boundary, which then rewrite the head alone (the totals and newest counts leave them out); field '<i>.<b mod N>' = '<b>:<count>:<step to the next non-empty bucket>' for an older non-empty bucket b of limit i (N = ceil(duration / resolution)), written when a write moves the limit's newest bucket past b; v7 adds a denial memo (state version 7): field 'e' = '<asked> <from> <until> <remaining> <retry> <reset> <index>' (until, retry and reset counted from <from>; retry -1: never) and field 'd' = the 'm' it was computed from, written by a denied call of mode '0' that records events and read no bucket field; while 'm' equals 'd' and 0 <= now - from < until (no head or window edge moves, every denying limit's retry lies ahead), a call asking as many events that records nothing replies from it; v7 reserve and settle (issue 32: a reservation holds its units until it is settled): a key holding reservations, or a newest bucket a settle emptied while older ones hold events, has 'l' = <limits> ' #<k>' then ' <id>:<expiry>:<estimate>:<time the reserve recorded at>' for each of the k reservations it holds (every call on the key finds the expired ones and settles each with its estimate at its expiry, or the last write if later, then drops it; a reserve of a new id on a key holding 1000 live ones is refused); every check of a limit counts, besides its window's buckets, the estimates held whose recorded bucket has left the window; a settle takes the whole estimate out of its recorded bucket in every limit whose window still counts it and records the actual cost in the bucket of now; no fast path, quiet case or memo reads such a key; its TTL is reset_after, which covers every reservation held until the bucket of its expiry leaves the window; a bucket's count is capped at 2 * max + 1 (the estimates held in it, at most max, may come out of it); a settle or an expiry found deletes the memo; a key that never held a reservation keeps the layout above; v7: a call that records nothing (a peek, a denial in mode '0') writes nothing, not even the rings it advanced (v5 and v6 saved them, keeping the last write's time, when more than 16 buckets left: a later call behind that call but not behind the last write then counted its window without the buckets dropped)",
		StateVersion: 7,
		Cost:         "HMGET, HSET of one field, PEXPIRE per recorded decision in the bucket of the last write, whatever the number of limits (an allowed call before the summary's boundary parses and writes the six numbers of the summary alone); one more field in the HSET per limit whose newest bucket moves; one more HMGET when buckets leave a ring or the oldest bucket is partly in the window; one more HMGET for a denied reply that walks the chain (one recording its events, or over a limit by more than one event; a denied call over by one event retries when its oldest bucket leaves the window, without a read); reads grow with the buckets passed since the last call, not with the window; one HSET of the memo ('d', 'e') by the first such denial of a state, after which the same denials are one HMGET; + TIME with the server clock; v7, a key holding reservations (issue 32): the general code, its reservations read with 'l' in the first HMGET (O(reservations + limits) more, never a bucket more), plus per settle and per expired reservation found an HGET and HSET or HDEL of its recorded bucket per limit, and an HSET of the bucket of its expiry per limit it moves the newest bucket of",
	},
	"fixed_window.v7": {
		Keys: []string{"KEYS[1] the state key: the counter of one window, named by the caller, who puts the window in it (envoyproxy/ratelimit's keys end in the window's start); it is used as given, with no hash tag, one key per call"},
		Argv: []string{
			"ARGV[1] eventCount, a canonical integer in [-2^52, 2^52]: > 0 count that many events and decide; 0 decide whether one more event would pass, writing nothing; < 0 delete the counter and reply as for a fresh key (limit_index 0)",
			commonArgv[1],
			"ARGV[3] now: a canonical integer in [0, 2^52] in that unit from the caller's clock, or '' to use the server's clock (TIME); it places the call in its window (for retry_after and reset_after) and must be the time the caller named the key's window from",
			"ARGV[4] mode: '1' every call counts its events, allowed or not (INCRBY and EXPIRE, as envoyproxy/ratelimit); '0' a denied call counts nothing",
			"ARGV[5..7] exactly one limit, the integers: max, window, expire (a key is one counter)",
			"max: events allowed in the window, 0..2^52 (0 denies every event)",
			"window: the window's length, in the unit, 1..2^52; the window of now starts at floor(now / window) * window",
			"expire: the counter's EXPIRE, in whole seconds, 1..2^52, set by every call that counts (envoyproxy/ratelimit's: the unit's seconds plus its jitter)",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		},
		Limit: []string{
			"max",
			"window",
			"expire",
		},
		Reply: []string{
			"allowed: 1 if the count after the call's events is at most max (for 0: the count + 1), else 0",
			"remaining: max minus the count after the call (>= 0)",
			"retry_after: 0 when allowed; else the time, in the unit, until the window ends (the next window's key is another counter); -1 if never (eventCount larger than max)",
			"reset_after: the time, in the unit, until the window ends; 0 when the count is 0 (see fresh)",
			"limit_index: 1 (the one limit); 0 after a reset",
		},
		Fresh:        "the counter is absent or 0",
		State:        "a string holding an integer, the count of the window (what INCRBY keeps: the key may be written by envoyproxy/ratelimit too), with the TTL of the last call that counted (EXPIRE, whole seconds); in mode '1' the count is never capped (it may pass max, by every denied event); a key holding anything else is refused and left unchanged",
		StateVersion: 7,
		Cost:         "mode '1' with eventCount > 0: INCRBY and EXPIRE, nothing else (envoyproxy/ratelimit's pipeline); otherwise GET, + INCRBY and EXPIRE when the events are counted; + TIME with the server clock",
	},
	"token_bucket.v7": {
		Keys: keys,
		Argv: append(reservationArgv(tokenBucketV6Argv()), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: capacity, refill_amount, refill_interval",
			"capacity: tokens in a full bucket, 1..10^9",
			"refill_amount: tokens added per refill_interval (continuously, exactly), 1..10^9",
			"refill_interval: in the unit, 1..2^52; capacity * refill_interval <= 2^50",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"capacity",
			"refill_amount",
			"refill_interval",
		},
		Reply:        reservationReply(),
		Fresh:        "every bucket is full (a fresh bucket is full); eventCount is the cost in tokens; in mode '1' a denied call still takes its tokens, down to -capacity",
		State:        "with one limit, one integer X = t * refill_amount + deficit written with '%d' (the server keeps it as an integer), t the writing call's now and deficit = (capacity - tokens) * refill_interval in [0, 2 * capacity * refill_interval]; at a later now the deficit is X - now * refill_amount clamped to [0, 2 * capacity * refill_interval]; when X would reach 2^53 (not exact), the text '<t> <deficit>' instead, read as the same line; the unit and the limits are not stored, every call checks the limits, and neither the unit nor the limits may change for a key (a call with other limits reads X under its own refill_amount and clamps to its own bounds: the same refill_amount keeps the time until full, and the same refill_interval too the missing tokens; another refill_amount, at times far from 0, reads as full when larger and as -capacity when smaller); a now earlier than the last write is not taken as its time: the deficit counts from now (denies earlier, never admits more: X never decreases, and a call that reads the deficit above 2 * capacity * refill_interval records nothing, even in mode '1'). A call with another number of limits starts fresh. With two or more limits, a string '<limits>|<last write time> <tokens * refill_interval per limit>', <limits> = ARGV[2] and ARGV[5..] joined by spaces, as the call that wrote the state sent them (a call with other limits or another unit starts fresh; one with the same limits need not check them again; a now earlier than the last write is treated as the time of that write; the key must be written by the script only). v7: a key holding reservations is a hash: field 's' the string above (v6's state), field 'o' = '<O> <first>' (O the sum of the estimates of the reservation fields, first at or before their earliest expiry: while first is after now, O is read from it, else the fields are scanned), field 'r<id>' = '<expiry> <estimate> <unit> <limits>' per reservation held (live, or expired and not yet dropped: every write drops those expired at its now; a reserve of a new id on a key holding 1000 live ones is refused); a reservation holds its units in every bucket until it is settled or expires (issue 32): tokens + O <= capacity, O the estimates of the live reservations (expiry after now), so the refill stops at capacity - O, and one expired at e held until e (the bucket at most capacity - O(e-) at e, O(e-) the estimates of those expiring at or after e, refilling from there); retry_after and reset_after count as if the holds ended now; its TTL never shortens while it is a hash (PEXPIRE GT: it covers every reservation's lifetime plus the refill of the units held, and reset_after); a write that leaves no reservation (the settle of the last one, or a write that drops the last expired one) writes the string again (a settle that leaves every bucket full deletes the key). v6 refuses the hash (WRONGTYPE, unchanged), so v6 and v7 share the state version and the keys: a v6 caller errs only on a key with open reservations",
		StateVersion: 6,
		Cost:         "GET, SET per recorded decision; + TIME with the server clock; one limit's call checks its limits itself on every call (no limits text in the state) and builds no function. A key holding reservations (a hash): GET (WRONGTYPE), HMGET of s and o (and the reservation's field), and per write HSET and PEXPIRE GT; once the earliest expiry has passed, HGETALL, and the next write's HDEL of the expired ones; a reserve on a key without them DEL (a string) and HSET, PEXPIRE; a reserve of a new id HLEN (unless the fields were scanned); a settle applied HDEL, HSET, PEXPIRE GT (or DEL and SET when it leaves no reservation)",
	},
	"zset_log.v7": {
		Keys: keys,
		Argv: append(reservationArgv(staleV6Argv()), []string{
			"ARGV[5..] 1 to 16 limits, each the integers: max, window",
			"max: events allowed in any window, 1..10^4 (v5: 10^6); a call adds or drops at most max + 1 members, so its work is bounded (about 10,000 members at most: a few milliseconds)",
			"window: in the unit, 1..2^52; at time now the events at times t > now - window count",
			"ARGV integers: every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused",
		}...),
		Limit: []string{
			"max",
			"window",
		},
		Reply:        reservationReply(),
		Fresh:        "no event is inside any limit's window",
		State:        "a sorted set, one member per event scored by its time, named '<time>:<index>:<base>' (index numbers the key's events from 1, written as a length letter a-p then digits; base is the index of the oldest member kept when the event was added); only the newest max+1 events (largest max) inside the widest window are kept; the unit must not change for a key, the limits may. v7: a key holding reservations holds below its events (scores < 0) member '@' scored <last write> - 2^53 and per reservation held 'r<id>:<expiry>:<estimate>', scored -id, its record removed when it is settled or converted (a reserve of a new id on a key holding 1000 drops the expired ones, and is refused if they are all live); a reservation has no event while held: every check of a limit counts the estimates held in every window; a settle records actual events at now; a reservation found expired by a call with eventCount > 0 or a settle that applies is converted first (its estimate as events at its expiry, or the last write's time if later); every event it records is named '<time>:<index>:<base>:0' and a reserve tags the newest event of a key that held none, so v6, which reads the newest member only, refuses the key rather than misreads it; its TTL never shortens (PEXPIRE GT). A key that never held a reservation keeps the layout above, shared with v5 and v6",
		StateVersion: 3,
		Cost:         "ZRANGE of the newest event, per limit at most one count of its window (none for a window the newest event is not in, or when the set holds one event): ZCOUNT of the events at or before the window's start, an integer, except for one limit whose set is large enough for a denial, which reads the oldest event in the window (ZRANGE BYSCORE LIMIT 0 1) as v5 does; ZADD, PEXPIRE per recorded decision, an occasional ZREMRANGEBYRANK, at most one ZRANGE per denied reply (none when its event is the newest, one of the call's, or, with one limit, the oldest in the window when it was read); + TIME with the server clock; no function is built on a call. A reserve or a settle, or any call on a key holding reservations, takes the general code: ZRANGE of the newest, ZSCORE of '@', ZRANGE of the records (every one: O(reservations)), ZCARD, per limit a ZCOUNT; a call converting expired reservations a ZADD of their events (at most largest max + 1 in all), ZREM and ZADD of their records; a settle applied ZADD of its events, ZREM and ZADD of its record; a reserve on a key that held none a ZREM and ZADD to tag its newest event; a write ZADD GT of '@' and PEXPIRE (GT on a key holding reservations); a reserve of a new id on a key holding 1000 records ZRANGE of the records and ZREM",
	},
}

// keys is KEYS, the same for every script.
var keys = []string{
	"KEYS[1] the limiter's state key, the only key the script reads or writes; it gets a TTL of reset_after on every write",
}

// tokenBucketV6Argv is commonArgv with token_bucket v6's rule for a now
// behind the last write (one limit: it counts from now).
func tokenBucketV6Argv() []string {
	argv := append([]string{}, commonArgv...)
	argv[2] = "ARGV[3] now: a canonical integer in [0, 2^52] in that unit from the caller's clock, or '' to use the server's clock (TIME); a now earlier than the state's last write is treated as the time of that write with two or more limits, and with one limit counts from now (the bucket is then emptier by the refill of the time behind, down to -capacity: an earlier denial, never a later one). A state written by a clock far ahead is stale, deleted and counted from full buckets: with two or more limits when its last write lies more than the widest refill horizon (the largest ceil(capacity * refill_interval / refill_amount), an empty bucket's refill) ahead of now and of the server's TIME (read then, for a caller's clock); with one limit when the deficit read at now, and at the server's TIME for a caller's clock, exceeds 3 * capacity * refill_interval (the bucket is full again more than three horizons ahead, so the last write lies more than one horizon ahead). So one caller's clock cannot lock a key for the others: every TTL written is at most reset_after from the writer's now"
	return argv
}

// ar1V6Argv is commonArgv with ar1 v6's rule for a state far ahead of the
// clocks (issue 30, M5).
func ar1V6Argv() []string {
	argv := append([]string{}, commonArgv...)
	argv[2] = "ARGV[3] now: a canonical integer in [0, 2^52] in that unit from the caller's clock, or '' to use the server's clock (TIME); a now earlier than the state's last write is treated as the time of that write (with one limit: a now whose boundary is before the last write's is treated as at that boundary), unless that write (with one limit: the start of its boundary) lies more than the widest horizon ahead of now and of the server's TIME (read then, for a caller's clock); a limit's horizon is an event's mean lifetime in the count, resolution * ceil(decay / (decay - 1000)): such a state, written by a clock far ahead, is stale, deleted and counted from 0, so one caller's clock cannot lock a key for the others"
	return argv
}

// staleV6Argv is commonArgv with v6's rule for a state far ahead of the
// clocks (sliding_window and zset_log; issue 30, M5).
func staleV6Argv() []string {
	argv := append([]string{}, commonArgv...)
	argv[2] = "ARGV[3] now: a canonical integer in [0, 2^52] in that unit from the caller's clock, or '' to use the server's clock (TIME); a now earlier than the state's last write is treated as the time of that write, unless that write lies more than the widest window (largest duration) ahead of now and of the server's TIME (read then, for a caller's clock): such a state, written by a clock far ahead, is stale, deleted and counted from now, so one caller's clock cannot lock a key for the others beyond the widest window; every TTL written is at most the widest window plus how far the last write lies ahead of the writer's now"
	return argv
}

// slidingWindowV7Argv is sliding_window v7's ARGV[1..4]: v6's, with
// reserve and settle, and eventCount 0 writing nothing (v5 and v6 may save
// the expired buckets a peek dropped).
func slidingWindowV7Argv() []string {
	argv := reservationArgv(staleV6Argv())
	argv[0] = strings.Replace(argv[0], "(sliding_window may save the expired buckets it dropped)", "(sliding_window v7 writes nothing either, where v5 and v6 saved the expired buckets it dropped when more than 16 left)", 1)
	return argv
}

// reservationArgv is argv (ARGV[1..4]) with v7's reserve and settle
// (issue 31) in ARGV[1] and ARGV[4].
func reservationArgv(argv []string) []string {
	argv = append([]string{}, argv...)
	argv[0] += "; with a reservation's mode, the estimate of a reserve (1..2^52) or the actual cost of a settle (0..2^52)"
	argv[3] = "ARGV[4] mode: '0' a denied call records nothing (with several limits, all record or none does); '1' every call records its events, allowed or not; " +
		"'reserve:<id>:<lifetime>' decides ARGV[1] (the estimate) as mode '0' and, admitted, holds reservation <id> until now + <lifetime> (a reserve of an id held records nothing and replies as admitted); " +
		"'settle:<id>' refunds estimate - ARGV[1] (capped: never more room than a full limit; zset_log: nothing to refund, as a reservation holds its estimate in every window and records ARGV[1] events at now when settled, or at its expiry with its estimate when found expired; sliding_window: the whole estimate out of the bucket of the reserve's time in every limit whose window still counts it, down to 0, a bucket it empties unlinked, and ARGV[1] recorded in the bucket of now, never denied: held until settled or expired, the reservation counts in every window) or charges ARGV[1] - estimate (never denied: the limits go into debt, bounded; zset_log: events at now) for every limit at once, then forgets <id> (zset_log: remembers it as settled); a cancel is a settle with ARGV[1] 0. " +
		"<id> and <lifetime> are canonical integers in [1, 2^52]: the id the caller chose, unique among the key's open reservations, and the time (in the unit) a settle may come; token_bucket: a settle must send the unit and limits of its reserve, else an error; at most 1000 reservations per key (a reserve of a new id past that is an error)"
	return argv
}

// reservationReply is reply with v7's replies to a reserve and a settle.
func reservationReply() []string {
	out := append([]string{}, reply...)
	out[0] += "; a reserve: admitted and recorded (its id held); a settle applied: 1 if one more event would pass after it (its reply is a peek's, eventCount 0, after the settle)"
	out[2] += "; a settle not applied (its id unknown, expired or settled already): -1"
	out[4] += "; a settle applied: >= 1, as a peek's; a settle not applied: 0 (with allowed 0, retry_after -1, and remaining and reset_after as a peek's): so a settle retried applies at most once, and its reply says whether this call applied it"
	return out
}

// commonArgv is ARGV[1..4], the same for every script.
var commonArgv = []string{
	"ARGV[1] eventCount, a canonical integer in [-2^52, 2^52]: > 0 record that many events and decide; 0 decide whether one more event would pass, recording nothing (sliding_window may save the expired buckets it dropped); < 0 delete the state and reply as for a fresh key (limit_index 0)",
	"ARGV[2] unit: 's', 'ms' or 'us', the unit of now, of every duration in the limits and of retry_after and reset_after",
	"ARGV[3] now: a canonical integer in [0, 2^52] in that unit from the caller's clock, or '' to use the server's clock (TIME); a now earlier than the state's last write is treated as the time of that write",
	"ARGV[4] mode: '0' a denied call records nothing (with several limits, all record or none does); '1' every call records its events, allowed or not",
}

// reply is the reply, the same for every script.
var reply = []string{
	"allowed: 1 if every limit admits the events, else 0",
	"remaining: how many more events would be admitted right now, after this call (minimum over the limits, >= 0)",
	"retry_after: 0 when allowed; else the smallest wait, in the unit, after which the same eventCount (for 0: one event) would be admitted if nothing else happens; -1 if never (eventCount larger than a limit's maximum)",
	"reset_after: the time, in the unit, until the state is fresh if nothing else happens (see fresh)",
	"limit_index: when allowed, the 1-based index of the limit with the fewest remaining; when denied, of the limit with the longest retry_after (never first); ties go to the lower index; 0 after a reset",
}
