package model

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// randomLogCall draws a call: mostly 1 to 3 events, peeks, resets, mode 1,
// time steps including none, long idle periods and steps back. The
// caller sets Server, the server's clock, which never steps back: a
// caller's clock behind it keeps the state (model.Stale).
func randomLogCall(r *rand.Rand, now, longest int64) Call {
	c := Call{Count: 1 + r.Int64N(3), Mode: r.IntN(2), Unit: "ms"}
	switch p := r.IntN(100); {
	case p < 10:
		c.Count = 0
	case p < 12:
		c.Count = -1
	case p < 20:
		c.Count = 1 + r.Int64N(30)
	}
	step := r.Int64N(max(longest/16, 1) + 1)
	switch p := r.IntN(100); {
	case p < 20:
		step = 0
	case p < 23:
		step = longest + r.Int64N(2*longest+1)
	case p < 28:
		step = -r.Int64N(longest/4 + 1)
	}
	c.Now = max(now+step, 0)
	return c
}

// TestLogBucketsAnswersAsZSetLogInSmallWindows: with windows of at most
// 64 units (buckets of one unit), LogBuckets gives ZSetLog's replies and
// existence, call by call.
func TestLogBucketsAnswersAsZSetLogInSmallWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for round := range 300 {
		var exact ZSetLog
		var buckets LogBuckets
		for range 1 + r.IntN(4) {
			exact.Limits = append(exact.Limits, ZSetLogLimit{Max: 1 + r.Int64N(20), Window: 1 + r.Int64N(64)})
		}
		buckets.Limits = exact.Limits
		now, server := int64(1000), int64(1000)
		for step := range 1000 {
			c := randomLogCall(r, now, 64)
			now, server = c.Now, max(server, c.Now)
			c.Server = server
			if a, b := exact.Do(c), buckets.Do(c); a != b || exact.Exists() != buckets.Exists() {
				t.Fatalf("round %d step %d %+v %+v: ZSetLog %+v, LogBuckets %+v", round, step, exact.Limits, c, a, b)
			}
			if exact.Exists() && exact.TTLMillis() != buckets.TTLMillis() {
				t.Fatalf("round %d step %d: TTL %d, LogBuckets %d", round, step, exact.TTLMillis(), buckets.TTLMillis())
			}
		}
	}
}

// TestLogBucketsBetweenExactLogs: with any windows, every reply of
// LogBuckets lies between the exact log's on the events it recorded and
// the exact log's with each window one bucket (less one unit) longer:
// admitted only if the exact log admits, Remaining at most the exact
// log's, RetryAfter and ResetAfter at most one bucket longer; and it
// holds at most 66 buckets per limit.
func TestLogBucketsBetweenExactLogs(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for round := range 300 {
		var buckets LogBuckets
		var longer []ZSetLogLimit
		var longest int64
		for range 1 + r.IntN(3) {
			l := ZSetLogLimit{Max: 1 + r.Int64N(40), Window: 65 + r.Int64N(100_000)}
			buckets.Limits = append(buckets.Limits, l)
			longer = append(longer, ZSetLogLimit{Max: l.Max, Window: l.Window + bucketWidth(l) - 1})
			longest = max(longest, l.Window)
		}
		// The exact logs of what LogBuckets recorded.
		var recorded []logEvent
		var last int64
		exists := false
		now, server := int64(1_000_000), int64(1_000_000)
		for step := range 600 {
			c := randomLogCall(r, now, longest)
			now, server = c.Now, max(server, c.Now)
			c.Server = server
			exact := ZSetLog{Limits: buckets.Limits, events: slices.Clone(recorded), exists: exists, last: last}
			wide := ZSetLog{Limits: longer, events: slices.Clone(recorded), exists: exists, last: last}
			e, w, b := exact.Do(c), wide.Do(c), buckets.Do(c)
			if c.Count < 0 {
				recorded, exists = nil, false
				if b != e {
					t.Fatalf("round %d step %d reset: %+v, exact %+v", round, step, b, e)
				}
				continue
			}
			if b.Allowed == 1 && e.Allowed != 1 || w.Allowed == 1 && b.Allowed != 1 {
				t.Fatalf("round %d step %d %+v: admitted exact %d, buckets %d, exact with longer windows %d", round, step, c, e.Allowed, b.Allowed, w.Allowed)
			}
			// Remaining and ResetAfter follow what each recorded: compared
			// when both made the same decision.
			same := func(x Reply) bool { return x.Allowed == b.Allowed || c.Mode == 1 || c.Count == 0 }
			if same(e) && (b.Remaining > e.Remaining || b.ResetAfter < e.ResetAfter) {
				t.Fatalf("round %d step %d %+v: remaining, reset exact %d, %d; buckets %d, %d", round, step, c, e.Remaining, e.ResetAfter, b.Remaining, b.ResetAfter)
			}
			if same(w) && (b.Remaining < w.Remaining || b.ResetAfter > w.ResetAfter) {
				t.Fatalf("round %d step %d %+v: remaining, reset buckets %d, %d; longer %d, %d", round, step, c, b.Remaining, b.ResetAfter, w.Remaining, w.ResetAfter)
			}
			if (b.RetryAfter == -1) != (e.RetryAfter == -1) || b.RetryAfter < e.RetryAfter || w.Allowed != 1 && b.RetryAfter > w.RetryAfter {
				t.Fatalf("round %d step %d %+v: retry exact %d, buckets %d, longer %d", round, step, c, e.RetryAfter, b.RetryAfter, w.RetryAfter)
			}
			if c.Count > 0 && (b.Allowed == 1 || c.Mode == 1) {
				stamp := c.Now
				if exists {
					stamp = max(stamp, last)
				}
				recorded, exists, last = append(recorded, logEvent{stamp, c.Count, 0}), true, stamp
			}
			for i, ring := range buckets.rings {
				if len(ring) > logBucketsPerWindow+2 {
					t.Fatalf("round %d step %d: limit %d holds %d buckets", round, step, i, len(ring))
				}
			}
		}
	}
}

// usager is a model that reads its Usage.
type usager interface {
	Model
	Usage() (Usage, bool)
}

// TestUsageNeverUnderCounts: a fresh model seeded with a model's Usage is
// at least as full as the model from then on: given the same calls (each
// recorded, mode 1, so both see the same events), it never admits one the
// model denies; and from Until on it answers a peek as a fresh model.
func TestUsageNeverUnderCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	// Each draws limits and returns a maker of fresh models of them.
	draws := map[string]func() func() usager{
		"sliding_window": func() func() usager {
			var ls []SlidingWindowLimit
			for range 1 + r.IntN(3) {
				res := 1 + r.Int64N(100)
				ls = append(ls, SlidingWindowLimit{Max: 1 + r.Int64N(20), Duration: res * (1 + r.Int64N(20)), Resolution: res})
			}
			return func() usager { return &SlidingWindow{Limits: ls} }
		},
		"zset_log": func() func() usager {
			var ls []ZSetLogLimit
			for range 1 + r.IntN(3) {
				ls = append(ls, ZSetLogLimit{Max: 1 + r.Int64N(20), Window: 1 + r.Int64N(5000)})
			}
			return func() usager { return &LogBuckets{Limits: ls} }
		},
		"token_bucket": func() func() usager {
			var ls []TokenBucketLimit
			for range 1 + r.IntN(3) {
				ls = append(ls, TokenBucketLimit{Capacity: 1 + r.Int64N(20), RefillAmount: 1 + r.Int64N(5), RefillInterval: 1 + r.Int64N(500)})
			}
			return func() usager { return &TokenBucket{Limits: ls} }
		},
		"ar1": func() func() usager {
			var ls []AR1Limit
			for range 1 + r.IntN(3) {
				ls = append(ls, AR1Limit{Max: 1 + r.Int64N(20), Decay: 1001 + r.Int64N(3000), Resolution: 1 + r.Int64N(200)})
			}
			return func() usager { return &AR1{Limits: ls} }
		},
	}
	for name, draw := range draws {
		seededRounds := 0
		for round := range 300 {
			fresh := draw()
			m := fresh()
			now := int64(10_000)
			for range r.IntN(40) {
				c := randomLogCall(r, now, 2000)
				if c.Count < 0 {
					continue
				}
				now = c.Now
				m.Do(c)
			}
			u, ok := m.Usage()
			if !ok {
				continue
			}
			seededRounds++
			if u.At < 0 || u.Events <= 0 || u.Until < u.At {
				t.Fatalf("%s round %d: usage %+v", name, round, u)
			}
			seeded, expired := fresh(), fresh()
			seeded.Do(u.Seed("ms"))
			expired.Do(u.Seed("ms"))
			later := max(now, u.At)
			for step := range 30 {
				later += r.Int64N(max((u.Until-u.At)/10, 1) + 1)
				c := Call{Count: 1 + r.Int64N(3), Now: later, Mode: 1, Unit: "ms"}
				a, b := m.Do(c), seeded.Do(c)
				if b.Allowed == 1 && a.Allowed != 1 {
					t.Fatalf("%s round %d step %d: seeded with %+v, admitted %+v, which the model denied", name, round, step, u, c)
				}
			}
			peek := Call{Count: 0, Now: u.Until + r.Int64N(100), Unit: "ms"}
			if a, b := fresh().Do(peek), expired.Do(peek); a != b {
				t.Fatalf("%s round %d: seeded with %+v, a peek at %d got %+v, a fresh model %+v", name, round, u, peek.Now, b, a)
			}
		}
		if seededRounds < 100 {
			t.Errorf("%s: only %d of 300 rounds had a usage to seed", name, seededRounds)
		}
	}
}
