package luagen

import "strings"

const manifestComment = "ratelua scripts: call by EVALSHA <sha1> 1 <state key> <ARGV...>; on NOSCRIPT, SCRIPT LOAD the file (or EVAL its text) and retry. " +
	"Or FUNCTION LOAD the library file on every master once and FCALL <function> 1 <state key> <ARGV...> (functions survive failovers and restarts). " +
	"Every reply is an array of five integers {allowed, remaining, retry_after, reset_after, limit_index}; " +
	"bad input is an error reply starting with 'ERR ratelua:' and writes nothing."

// v1Argv is ARGV[1..4], the same for every v1 script.
var v1Argv = []string{
	"ARGV[1] eventCount, an integer in [-2^52, 2^52]: > 0 record that many events and decide; 0 decide whether one more event would pass, recording nothing (sliding_window may save the expired buckets it dropped); < 0 delete the state and reply as for a fresh key (limit_index 0)",
	"ARGV[2] unit: 's', 'ms' or 'us', the unit of now, of every duration in the limits and of retry_after and reset_after",
	"ARGV[3] now: an integer in [0, 2^52] in that unit from the caller's clock, or '' to use the server's clock (TIME); a now earlier than the state's last write is treated as the time of that write",
	"ARGV[4] mode: '0' a denied call records nothing (with several limits, all record or none does); '1' every call records its events, allowed or not",
}

var v1Keys = []string{
	"KEYS[1] the limiter's state key, the only key the script reads or writes; it gets a TTL of reset_after on every write",
}

var v1Reply = []string{
	"allowed: 1 if every limit admits the events, else 0",
	"remaining: how many more events would be admitted right now, after this call (minimum over the limits, >= 0)",
	"retry_after: 0 when allowed; else the smallest wait, in the unit, after which the same eventCount (for 0: one event) would be admitted if nothing else happens; -1 if never (eventCount larger than a limit's maximum)",
	"reset_after: the time, in the unit, until the state is fresh if nothing else happens (see fresh)",
	"limit_index: when allowed, the 1-based index of the limit with the fewest remaining; when denied, of the limit with the longest retry_after (never first); ties go to the lower index; 0 after a reset",
}

func v1(limitArgs []string, limit []string, fresh, state, cost string) Entry {
	argv := append(append([]string{}, v1Argv...),
		"ARGV[5..] 1 to 16 limits, each the integers: "+strings.Join(limit, ", "))
	argv = append(argv, limitArgs...)
	return Entry{Keys: v1Keys, Argv: argv, Limit: limit, Reply: v1Reply, Fresh: fresh, State: state, Cost: cost}
}

// contracts holds the contract in words of every script version, by
// "name.vN".
var contracts = map[string]Entry{
	"sliding_window.v1": v1(
		[]string{
			"max: events allowed in the window, 1..10^9",
			"duration: the window, in the unit, 1..2^52",
			"resolution: the bucket width, in the unit, 1..duration; ceil(duration / resolution) <= 10000",
		},
		[]string{"max", "duration", "resolution"},
		"every limit counts 0 events: bucket b = floor(t / resolution) holds the events at time t, and at time now a limit counts the buckets b > floor((now - duration) / resolution)",
		"a hash: field 'm' = '<last write time> <8 hex of SHA1 of unit and limits>' then '<ring total> <span to the oldest non-empty bucket> <ring end lag>' per limit; field '<i>.<b mod N>' = '<b>:<count>:<step to the next non-empty bucket>' for bucket b of limit i (N = ceil(duration / resolution)); other limits on the same key start fresh",
		"HGET, HMGET, HSET, PEXPIRE per recorded decision whatever the number of limits and buckets; one more HMGET for a denied reply in the common case; reads grow with the buckets passed since the last call, not with the window; + TIME with the server clock",
	),
	"ar1.v1": v1(
		[]string{
			"max: events allowed in the decayed count, 1..10^9",
			"decay: in thousandths (2000 = halve), 1001..10^9; the count is divided by decay/1000 at every multiple of resolution",
			"resolution: the decay period, in the unit, 1..2^52",
		},
		[]string{"max", "decay", "resolution"},
		"every limit's decayed count is 0 (a count below 1/1000 of an event is 0)",
		"a string '<last write time> <8 hex of SHA1 of unit and limits> <count per limit as %.17g>'; other limits on the same key start fresh",
		"GET, SET per recorded decision; + TIME with the server clock",
	),
	"zset_log.v1": v1(
		[]string{
			"max: events allowed in any window, 1..10^6",
			"window: in the unit, 1..2^52; at time now the events at times t > now - window count",
		},
		[]string{"max", "window"},
		"no event is inside any limit's window",
		"a sorted set, one member per event scored by its time, named '<time>:<seq>:<set size>'; only the newest max+1 events (largest max) inside the largest window are kept; the unit must not change for a key",
		"ZRANGE, one ZCOUNT per limit, ZADD, PEXPIRE per recorded decision, an occasional ZREMRANGEBYRANK, one ZRANGE per denied reply; + TIME with the server clock",
	),
	"token_bucket.v1": v1(
		[]string{
			"capacity: tokens in a full bucket, 1..10^9",
			"refill_amount: tokens added per refill_interval (continuously, exactly), 1..10^9",
			"refill_interval: in the unit, 1..2^52; capacity * refill_interval <= 2^50",
		},
		[]string{"capacity", "refill_amount", "refill_interval"},
		"every bucket is full (a fresh bucket is full); eventCount is the cost in tokens; in mode '1' a denied call still takes its tokens, down to -capacity",
		"a string '<last write time> <8 hex of SHA1 of unit and limits> <tokens * refill_interval per limit>'; other limits on the same key start fresh",
		"GET, SET per recorded decision; + TIME with the server clock",
	),
}

// v2Signature is how v2 words the signature its states keep.
const v2Signature = "the unit and limits folded into a number below 2^32"

// v2 is a v2 script's contract: v1's, with the state in words of v2 and the
// same cost in commands.
func v2(v1Name, state string) Entry {
	e := contracts[v1Name]
	e.State = state
	return e
}

func init() {
	contracts["sliding_window.v2"] = v2("sliding_window.v1",
		"a hash: field 'm' = '<last write time> <signature: "+v2Signature+">' then '<ring total> <span to the oldest non-empty bucket> <ring end lag>' per limit; field '<i>.<b mod N>' = '<b>:<count>:<step to the next non-empty bucket>' for bucket b of limit i (N = ceil(duration / resolution)); other limits on the same key start fresh")
	contracts["ar1.v2"] = v2("ar1.v1",
		"a string '<last write time> <signature: "+v2Signature+"> <count per limit as %.17g>'; other limits on the same key start fresh")
	contracts["zset_log.v2"] = v2("zset_log.v1", contracts["zset_log.v1"].State)
	zset := contracts["zset_log.v2"]
	zset.Cost = "ZRANGE, at most one ZCOUNT per limit (none for a window the newest event is not in, or when the set holds one event), ZADD, PEXPIRE per recorded decision, an occasional ZREMRANGEBYRANK, at most one ZRANGE per denied reply (none when its event is the newest or already read); + TIME with the server clock"
	contracts["zset_log.v2"] = zset
	contracts["token_bucket.v2"] = v2("token_bucket.v1",
		"a string '<last write time> <signature: "+v2Signature+"> <tokens * refill_interval per limit>'; other limits on the same key start fresh")
}

// v3Integers is how v3 words the integers it accepts.
const v3Integers = "every integer is canonical decimal text: '0', or an optional '-' then a digit 1-9 then digits; '-0', leading zeros, '+', spaces, exponents, hex and fractions are refused"

// v3Limits is how v3 words the limits text its states keep.
const v3Limits = "<limits> = ARGV[2] and ARGV[5..] joined by spaces, as the call that wrote the state sent them (a call with other limits or another unit starts fresh; one with the same limits need not check them again; the key must be written by the script only)"

// v3 is a v3 script's contract: v1's, with canonical integers, the state
// in words of v3 and its cost in commands.
func v3(v1Name, state, cost string) Entry {
	e := contracts[v1Name]
	argv := make([]string, 0, len(e.Argv))
	for _, a := range e.Argv {
		a = strings.ReplaceAll(a, "an integer in", "a canonical integer in")
		argv = append(argv, a)
	}
	e.Argv = append(argv, "ARGV integers: "+v3Integers)
	e.State, e.Cost = state, cost
	return e
}

func init() {
	contracts["sliding_window.v3"] = v3("sliding_window.v1",
		"a hash: field 'l' = <limits>, "+v3Limits+"; field 'm' = '<last write time>' then ' <ring total> <span to the oldest non-empty bucket> <ring end lag>' per limit; field '<i>.<b mod N>' = '<b>:<count>:<step to the next non-empty bucket>' for bucket b of limit i (N = ceil(duration / resolution))",
		contracts["sliding_window.v1"].Cost)
	contracts["ar1.v3"] = v3("ar1.v1",
		"a string '<limits>|<last write time> <count per limit as %.17g>', "+v3Limits,
		contracts["ar1.v1"].Cost)
	contracts["zset_log.v3"] = v3("zset_log.v1",
		"a sorted set, one member per event scored by its time, named '<time>:<index>:<base>' (index numbers the key's events from 1, written as a length letter a-p then digits; base is the index of the oldest member kept when the event was added); only the newest max+1 events (largest max) inside the widest window are kept; the unit must not change for a key, the limits may",
		contracts["zset_log.v2"].Cost)
	contracts["token_bucket.v3"] = v3("token_bucket.v1",
		"a string '<limits>|<last write time> <tokens * refill_interval per limit>', "+v3Limits,
		contracts["token_bucket.v1"].Cost)
}

// v4 keeps v3's contracts, state layouts and commands word for word: it
// does less Lua work per call, and reads and writes v3's states (the two
// may run on one key).
func init() {
	for _, name := range []string{"token_bucket", "ar1", "zset_log", "sliding_window"} {
		e := contracts[name+".v3"]
		e.StateVersion = 3
		contracts[name+".v4"] = e
	}
}

// v5: each script's own block says what its v5 changes from v4; a v5 that
// keeps v4's contract and state layout shares v3's state like v4.

func init() {
	e := contracts["token_bucket.v4"]
	e.StateVersion = 5
	e.State = "with one limit, a string '<last write time> <deficit>' in unit ms, '<last write time> <deficit> s' in unit s, '<last write time> <deficit> us' in unit us, deficit = (capacity - tokens) * refill_interval in [0, 2 * capacity * refill_interval]; the limits are not stored and every call checks them; a call with other limits in the same unit carries the state over, reading the same time and deficit under its own limits with the deficit clamped to 2 * capacity * refill_interval; another unit or another number of limits starts fresh. " +
		"With two or more limits, v4's string '<limits>|<last write time> <tokens * refill_interval per limit>', " + v3Limits
	e.Cost = "GET, SET per recorded decision; + TIME with the server clock; one limit's call checks its limits itself on every call (no limits text in the state)"
	contracts["token_bucket.v5"] = e
}

func init() {
	e := contracts["ar1.v4"]
	e.StateVersion = 5
	e.State = "with one limit, a string '<last write time> <count as %.17g>' in unit ms, '<last write time> <count> s' in unit s, '<last write time> <count> us' in unit us; the limits are not stored and every call checks them; a call with other limits in the same unit carries the count over, decayed from the stored time with its own decay and resolution; another unit or another number of limits starts fresh. " +
		"With two or more limits, v4's string '<limits>|<last write time> <count per limit as %.17g>', " + v3Limits
	e.Cost = "GET, SET per recorded decision; + TIME with the server clock; one limit's call checks its limits itself on every call (no limits text in the state)"
	contracts["ar1.v5"] = e
}

// zset_log v5 keeps v4's state (state version 3); with one limit it counts
// the window from its oldest event, read by score, instead of ZCOUNT.
func init() {
	e := contracts["zset_log.v4"]
	e.Cost = "ZRANGE of the newest event, per limit at most one ZCOUNT (one limit: one ZRANGE BYSCORE LIMIT 0 1 of the oldest event in the window; none for a window the newest event is not in, or when the set holds one event), ZADD, PEXPIRE per recorded decision, an occasional ZREMRANGEBYRANK, at most one ZRANGE per denied reply (none when its event is the newest, one of the call's, or, with one limit, the oldest in the window); + TIME with the server clock"
	contracts["zset_log.v5"] = e
}

// sliding_window v5 keeps each limit's newest bucket in field 'm', so a
// decision in the bucket of the last write reads 'l' and 'm' and writes 'm'
// alone; its state layout is its own (state version 5).
func init() {
	e := contracts["sliding_window.v4"]
	e.State = "a hash: field 'l' = <limits>, " + v3Limits + "; field 'm' = '<last write time>' then ' <ring total> <span to the oldest non-empty bucket> <ring end lag> <count of the newest bucket>' per limit (the newest bucket, that of the last write, lives in 'm' only); field '<i>.<b mod N>' = '<b>:<count>:<step to the next non-empty bucket>' for an older non-empty bucket b of limit i (N = ceil(duration / resolution)), written when a write moves the limit's newest bucket past b"
	e.Cost = "HMGET, HSET of one field, PEXPIRE per recorded decision in the bucket of the last write, whatever the number of limits; one more field in the HSET per limit whose newest bucket moves; one more HMGET when buckets leave a ring or the oldest bucket is partly in the window; one more HMGET for a denied reply in the common case; reads grow with the buckets passed since the last call, not with the window; + TIME with the server clock"
	e.StateVersion = 5
	contracts["sliding_window.v5"] = e
}
