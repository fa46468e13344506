// Package model holds a reference model in plain Go of each ratelua
// algorithm: the specification the Lua scripts are tested against. The
// models keep their state in the most direct form (events, exact rational
// token counts), not in the scripts' layouts, so that agreement means the
// layouts are right.
package model

// MaxTime bounds now, durations and the durations in replies: 2^52.
const MaxTime = 1 << 52

// Reply is the five integers of the v1 wire contract.
type Reply struct {
	Allowed    int64
	Remaining  int64
	RetryAfter int64
	ResetAfter int64
	LimitIndex int64
}

// Ints returns the reply as the script's array.
func (r Reply) Ints() []int64 {
	return []int64{r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter, r.LimitIndex}
}

// Call is one call of the contract.
type Call struct {
	Count int64  // eventCount
	Now   int64  // caller time in the unit
	Mode  int    // 0 or 1
	Unit  string // "s", "ms" or "us"
	// Op is the concurrency script's mode other than '0': OpRenew or
	// OpRelease of lease Lease (ARGV[7]); v7's reserve or settle
	// (OpReserve, OpSettle: ARGV[4] 'reserve:<ID>:<Lifetime>' or
	// 'settle:<ID>', Count the estimate or the actual cost); "" for every
	// other call.
	Op    string
	Lease int64
	// ID and Lifetime are a reservation's id and settle lifetime (in the
	// unit), for OpReserve and OpSettle.
	ID, Lifetime int64
	// Server is the server's clock (TIME) in the unit, which a script
	// reads when a state's last write lies further ahead of Now than the
	// limits' widest window (see Stale); 0 stands for Now (a call on the
	// server's clock).
	Server int64
}

// Stale reports whether a state last written at last is stale for call c
// under limits whose widest window is widest: its last write lies more than
// widest ahead of both the caller's now and the server's clock. Such a
// state was written by a clock far ahead (a caller at year 9999): it is
// treated as absent (deleted, counted from now), so that one caller's clock
// cannot lock a key for the others beyond the widest window.
func Stale(c Call, last, widest int64) bool {
	return last > c.Now+widest && last > max(c.Now, c.Server)+widest
}

// Model is implemented by every algorithm's model.
type Model interface {
	// Do applies the call and returns the reply the script must give.
	Do(c Call) Reply
	// Exists reports whether the script's state key must exist.
	Exists() bool
	// TTLMillis is the PTTL the state key must have right after a write.
	TTLMillis() int64
}

type outcome struct {
	remaining, retry, reset int64
}

// decide folds per-limit outcomes into a reply by the contract's rule.
func decide(allowed bool, outcomes []outcome) Reply {
	r := Reply{LimitIndex: 1, Remaining: -1}
	if allowed {
		r.Allowed = 1
	}
	for i, o := range outcomes {
		if r.Remaining < 0 || o.remaining < r.Remaining {
			r.Remaining = o.remaining
			if allowed {
				r.LimitIndex = int64(i + 1)
			}
		}
		r.ResetAfter = max(r.ResetAfter, o.reset)
		if !allowed && r.RetryAfter != -1 && (o.retry == -1 || o.retry > r.RetryAfter) {
			r.RetryAfter, r.LimitIndex = o.retry, int64(i+1)
		}
	}
	return r
}

// fresh is the reply after a reset: allowed, the smallest maximum remaining.
func fresh(maxima []int64) Reply {
	r := Reply{Allowed: 1, Remaining: maxima[0]}
	for _, m := range maxima {
		r.Remaining = min(r.Remaining, m)
	}
	return r
}

// clampDuration bounds a reported duration to [0, MaxTime].
func clampDuration(d int64) int64 {
	return min(max(d, 0), MaxTime)
}

// ttlMillis converts a duration in unit to the TTL the scripts set.
func ttlMillis(unit string, d int64) int64 {
	var ms int64
	switch unit {
	case "s":
		ms = d * 1000
	case "us":
		ms = (d + 999) / 1000
	default:
		ms = d
	}
	return min(max(ms, 1), MaxTime)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 {
	return -floorDiv(-a, b)
}
