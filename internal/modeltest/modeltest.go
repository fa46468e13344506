// Package modeltest draws random limits and calls for the scripts and
// their reference models (package model): the property, fuzz and
// differential tests in the root package and in integration/ share them.
package modeltest

import (
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/ratelua/ratelua/internal/model"
)

// Generator makes a random limit set and its model for one script.
type Generator func(r *rand.Rand, unit string, limits int) (model.Model, []string, int64)

// Scale returns a time scale for the unit so durations stay realistic.
func Scale(unit string) int64 {
	switch unit {
	case "ms":
		return 1000
	case "us":
		return 1_000_000
	}
	return 1
}

// NLimits draws how many limits a call takes: mostly 1, often 2 to 4,
// sometimes 16.
func NLimits(r *rand.Rand) int {
	switch p := r.IntN(20); {
	case p == 0:
		return 16
	case p < 10:
		return 1
	default:
		return 2 + r.IntN(3)
	}
}

// Strs formats integers as decimal text.
func Strs(xs ...int64) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatInt(x, 10)
	}
	return out
}

// Generators holds a Generator per script name. Its models follow the
// newest version of each script; ForVersion sets an older one's rules.
var Generators = map[string]Generator{
	"sliding_window": func(r *rand.Rand, unit string, n int) (model.Model, []string, int64) {
		m := &model.SlidingWindow{}
		var args []string
		var longest int64
		for range n {
			res := (1 + r.Int64N(10)) * Scale(unit) / int64(1+r.IntN(4))
			res = max(res, 1)
			dur := res * (1 + r.Int64N(12))
			if r.IntN(4) == 0 {
				// A ring of more than 16 buckets: a call that records
				// nothing may then see more than 16 leave (v5 and v6
				// saved them there, TestSlidingWindowSaveBehind).
				dur = res * (17 + r.Int64N(48))
			}
			if r.IntN(3) == 0 {
				dur += r.Int64N(res) // not a multiple: a partial bucket
			}
			l := model.SlidingWindowLimit{Max: 1 + r.Int64N(12), Duration: dur, Resolution: res}
			m.Limits = append(m.Limits, l)
			args = append(args, Strs(l.Max, l.Duration, l.Resolution)...)
			longest = max(longest, dur)
		}
		return m, args, longest
	},
	"ar1": func(r *rand.Rand, unit string, n int) (model.Model, []string, int64) {
		m := &model.AR1{}
		var args []string
		var longest int64
		for range n {
			decay := []int64{1001, 1100, 1500, 2000, 2718, 10000}[r.IntN(6)]
			if r.IntN(4) == 0 {
				decay = 1001 + r.Int64N(5000)
			}
			res := max(1, (1+r.Int64N(10))*Scale(unit)/int64(1+r.IntN(4)))
			l := model.AR1Limit{Max: 1 + r.Int64N(12), Decay: decay, Resolution: res}
			m.Limits = append(m.Limits, l)
			args = append(args, Strs(l.Max, l.Decay, l.Resolution)...)
			longest = max(longest, res*20)
		}
		return m, args, longest
	},
	"zset_log": func(r *rand.Rand, unit string, n int) (model.Model, []string, int64) {
		m := &model.ZSetLog{}
		var args []string
		var longest int64
		for range n {
			l := model.ZSetLogLimit{Max: 1 + r.Int64N(12), Window: 1 + r.Int64N(60*Scale(unit))}
			m.Limits = append(m.Limits, l)
			args = append(args, Strs(l.Max, l.Window)...)
			longest = max(longest, l.Window)
		}
		return m, args, longest
	},
	"concurrency": func(r *rand.Rand, unit string, _ int) (model.Model, []string, int64) {
		// One limit per call, whatever was asked.
		m := &model.Concurrency{Max: 1 + r.Int64N(8), Lease: 1 + r.Int64N(30*Scale(unit)), ServerUs: FrozenUs}
		if r.IntN(10) == 0 {
			m.Max = 1 + r.Int64N(1000)
		}
		return m, Strs(m.Max, m.Lease), m.Lease
	},
	"fixed_window": func(r *rand.Rand, unit string, _ int) (model.Model, []string, int64) {
		// One limit per call, whatever was asked; Expire in seconds.
		m := &model.FixedWindow{Max: r.Int64N(12), Window: 1 + r.Int64N(60*Scale(unit)), Expire: 1 + r.Int64N(400)}
		return m, Strs(m.Max, m.Window, m.Expire), m.Window
	},
	"token_bucket": func(r *rand.Rand, unit string, n int) (model.Model, []string, int64) {
		m := &model.TokenBucket{BehindCounts: true}
		var args []string
		var longest int64
		for range n {
			l := model.TokenBucketLimit{
				Capacity:       1 + r.Int64N(12),
				RefillAmount:   1 + r.Int64N(5),
				RefillInterval: 1 + r.Int64N(10*Scale(unit)),
			}
			if r.IntN(6) == 0 {
				// The same rate in larger numbers: with one limit, v6's
				// state then reaches 2^53 (its text layout) in us, and
				// often in ms.
				l.RefillAmount, l.RefillInterval = l.RefillAmount*1000, l.RefillInterval*1000
			}
			m.Limits = append(m.Limits, l)
			args = append(args, Strs(l.Capacity, l.RefillAmount, l.RefillInterval)...)
			longest = max(longest, l.RefillInterval*l.Capacity/l.RefillAmount)
		}
		return m, args, longest
	},
}

// NextCall draws the next call of a sequence on model m: for the
// concurrency script a call of ConcurrencyCall, else of RandomCall.
func NextCall(r *rand.Rand, m model.Model, now int64, unit string, longest int64) model.Call {
	if c, ok := m.(*model.Concurrency); ok {
		return ConcurrencyCall(r, c, now, unit, longest)
	}
	if h, ok := m.(reserver); ok && h.Reservable() {
		return ReservationCall(r, h.Reservations(), now, unit, longest)
	}
	return RandomCall(r, now, unit, longest)
}

// ConcurrencyCall draws the next call of the concurrency script on m:
// acquires of one to a few slots (sometimes more than max, rarely huge),
// decisions, resets, and renewals and releases, mostly of a lease in the
// state (live or expired), sometimes with the wrong slots or an id never
// handed out; time steps within the lease time mostly, some longer, some
// backwards.
func ConcurrencyCall(r *rand.Rand, m *model.Concurrency, now int64, unit string, longest int64) model.Call {
	c := model.Call{Unit: unit, Server: EngineSeconds * Scale(unit)}
	switch p := r.IntN(100); {
	case p < 40:
		c.Count = 1 + r.Int64N(2)
		if m.V6 && r.IntN(2) == 0 {
			c.Lease = callerID(r, m)
		}
	case p < 47:
		c.Count = 1 + r.Int64N(m.Max+3)
	case p < 48:
		c.Count = 1 + r.Int64N(1<<52)
	case p < 56:
		c.Count = 0
	case p < 59:
		c.Count = -1 - r.Int64N(3)
	default:
		c.Op = model.OpRelease
		if p < 78 {
			c.Op = model.OpRenew
		}
		ids, slots := m.Leases()
		switch q := r.IntN(100); {
		case q < 75 && len(ids) > 0:
			i := r.IntN(len(ids))
			c.Lease, c.Count = ids[i], slots[i]
			if r.IntN(10) == 0 {
				c.Count = max(1, c.Count+[]int64{-1, 1}[r.IntN(2)])
			}
		case q < 92:
			c.Lease, c.Count = 1+r.Int64N(m.Counter()+2), 1+r.Int64N(3)
		default:
			c.Lease, c.Count = 1+r.Int64N(1<<52), 1+r.Int64N(1_000_000)
		}
	}
	var step int64
	switch p := r.IntN(100); {
	case p < 25:
		step = 0
	case p < 75:
		step = r.Int64N(max(longest/6, 1) + 1)
	case p < 88:
		step = r.Int64N(longest + 1)
	case p < 93:
		step = longest + r.Int64N(2*longest+1)
	default:
		step = -r.Int64N(longest + 1)
	}
	c.Now = min(max(now+step, 0), model.MaxTime)
	return c
}

// reserver is a model of a script with reserve and settle (v7).
type reserver interface {
	Reservable() bool
	Reservations() []int64
}

// ReservationCall draws the next call on a script with reserve and settle
// whose state holds the reservations ids: a third of the calls reserve
// (ids from a small pool, so that a reserve retried meets its own, and
// sometimes any id; lifetimes from one unit to twice the longest window),
// a third settle (mostly an id held, live or expired, else any; the actual
// cost 0 (a cancel), below, at or above the estimates drawn, rarely huge),
// the rest are RandomCall's.
func ReservationCall(r *rand.Rand, ids []int64, now int64, unit string, longest int64) model.Call {
	c := RandomCall(r, now, unit, longest)
	switch p := r.IntN(90); {
	case p < 30:
		c.Op, c.Mode = model.OpReserve, 0
		c.ID = 1 + r.Int64N(6)
		if r.IntN(10) == 0 {
			c.ID = 1 + r.Int64N(1<<52)
		}
		c.Count = max(c.Count, 1)
		if r.IntN(2) == 0 {
			c.Count = 1 + r.Int64N(4)
		}
		c.Lifetime = 1 + r.Int64N(2*longest+1)
		if r.IntN(20) == 0 {
			c.Lifetime = 1 + r.Int64N(model.MaxTime)
		}
	case p < 60:
		c.Op, c.Mode = model.OpSettle, 0
		c.ID = 1 + r.Int64N(8)
		if len(ids) > 0 && r.IntN(4) != 0 {
			c.ID = ids[r.IntN(len(ids))]
		}
		switch q := r.IntN(10); {
		case q < 3:
			c.Count = 0
		case q < 8:
			c.Count = r.Int64N(6)
		case q < 9:
			c.Count = r.Int64N(40)
		default:
			c.Count = r.Int64N(model.MaxTime + 1)
		}
	}
	return c
}

// EngineSeconds is the server clock (TIME) of the tests' frozen luatest
// engines, in seconds: the calls drawn here carry it as their Server.
const EngineSeconds = 1_700_000_000

// callerID draws the lease id a v6 caller chooses for an acquire: mostly
// random in [1, 2^52], sometimes one the counter would hand out next (so
// that the counter must skip it), never one of a lease in the state (it
// may be live at the call's time, which the script refuses).
func callerID(r *rand.Rand, m *model.Concurrency) int64 {
	ids, _ := m.Leases()
	for {
		id := 1 + r.Int64N(1<<52)
		if r.IntN(3) == 0 {
			id = m.Counter() + 1 + r.Int64N(3)
		}
		if !slices.Contains(ids, id) {
			return id
		}
	}
}

// RandomCall draws the next call: counts including 0, negative and huge;
// time steps including zero, large jumps and steps backwards.
func RandomCall(r *rand.Rand, now int64, unit string, longest int64) model.Call {
	c := model.Call{Unit: unit, Mode: r.IntN(2), Server: EngineSeconds * Scale(unit)}
	switch p := r.IntN(100); {
	case p < 60:
		c.Count = 1 + r.Int64N(3)
	case p < 72:
		c.Count = 0
	case p < 76:
		c.Count = -1 - r.Int64N(5)
	case p < 94:
		c.Count = 1 + r.Int64N(30)
	case p < 97:
		c.Count = 1 + r.Int64N(1<<40)
	default:
		c.Count = 1 << 52
	}
	var step int64
	switch p := r.IntN(100); {
	case p < 20:
		step = 0
	case p < 70:
		step = r.Int64N(max(longest/8, 1) + 1)
	case p < 85:
		step = r.Int64N(longest + 1)
	case p < 90:
		step = longest + r.Int64N(3*longest+1) // a long idle period
	default:
		step = -r.Int64N(longest + 1) // the caller's clock went back
	}
	c.Now = min(max(now+step, 0), model.MaxTime)
	return c
}

// keyBytes are the bytes random state keys are drawn from: the hash tag's
// braces, the escape character of the Go API's tags, NUL, control and
// non-ASCII bytes, besides plain ones.
var keyBytes = []byte("ab:{}%\x00\x1b\n \xc3\xa9\xff09")

// RandomKey draws a state key of 0 to a few hundred bytes, so that a script
// that behaves differently on long or odd keys is caught.
func RandomKey(r *rand.Rand) string {
	var n int
	switch p := r.IntN(10); {
	case p == 0:
		n = 0
	case p < 5:
		n = 1 + r.IntN(40)
	default:
		n = 41 + r.IntN(300)
	}
	key := make([]byte, n)
	for i := range key {
		key[i] = keyBytes[r.IntN(len(keyBytes))]
	}
	return string(key)
}

// CallArgs builds ARGV for one call: with an Op (the concurrency
// script's renew or release), the Op is ARGV[4] and the lease id follows
// the limits.
func CallArgs(c model.Call, limits []string) []string {
	args := []string{strconv.FormatInt(c.Count, 10), c.Unit, strconv.FormatInt(c.Now, 10), strconv.Itoa(c.Mode)}
	if c.Op == model.OpRenew || c.Op == model.OpRelease {
		args[3] = c.Op
		return append(append(args, limits...), strconv.FormatInt(c.Lease, 10))
	}
	switch c.Op {
	case model.OpReserve:
		args[3] = "reserve:" + strconv.FormatInt(c.ID, 10) + ":" + strconv.FormatInt(c.Lifetime, 10)
		return append(args, limits...)
	case model.OpSettle:
		args[3] = "settle:" + strconv.FormatInt(c.ID, 10)
		return append(args, limits...)
	}
	if c.Lease != 0 {
		// A v6 acquire of the caller's lease id.
		return append(append(args, limits...), strconv.FormatInt(c.Lease, 10))
	}
	return append(args, limits...)
}

// ForVersion sets m, made by a Generator (which models the newest version
// of each script), to the rules of version of its script, and returns it.
func ForVersion(m model.Model, version int) model.Model {
	switch m := m.(type) {
	case *model.TokenBucket:
		m.BehindCounts = version >= 6
		m.KeepsStale = version < 6
		m.Reserves = version >= 7
	case *model.AR1:
		m.KeepsStale = version < 6
	case *model.SlidingWindow:
		m.KeepsStale = version < 6
		m.Reserves = version >= 7
	case *model.ZSetLog:
		m.KeepsStale = version < 6
		m.Reserves = version >= 7
	}
	if c, ok := m.(*model.Concurrency); ok {
		c.V6 = version >= 6
	}
	return m
}

// FrozenUs is the clock of the tests' frozen engines (TIME), 1.7e9 s, in
// microseconds.
const FrozenUs = 1_700_000_000 * 1_000_000

// SavesBehind reports whether m is a sliding_window model of a version
// before 7 with a ring of more than 16 buckets: there a call that records
// nothing may find more than 16 buckets leaving and save the advanced
// rings with the last write's time, and a later call behind it but not
// behind that write counts without them (the known limit of v5 and v6,
// lua/README.md; the model has v7's rule). A test of those released
// versions against the model draws other limits.
func SavesBehind(m model.Model, version int) bool {
	sw, ok := m.(*model.SlidingWindow)
	if !ok || version >= 7 {
		return false
	}
	for _, l := range sw.Limits {
		if (l.Duration+l.Resolution-1)/l.Resolution > 16 {
			return true
		}
	}
	return false
}
