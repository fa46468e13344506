package hotkey

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestSizeRules: for random rates, thresholds, lifetimes, caps and
// replies, K is 1 below the threshold, within [1, maxBatch], at most
// remaining/2 + 1, ceil(rate x life) otherwise, and grows with the rate
// and with the remaining units.
func TestSizeRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	for i := range 100_000 {
		rate := rng.Float64() * 20_000
		hot := 1 + rng.Float64()*200
		life := time.Duration(1+rng.IntN(500)) * time.Millisecond
		maxBatch := int64(1 + rng.IntN(2000))
		remaining := int64(rng.IntN(5000)) - 1
		k := Size(rate, hot, life, maxBatch, remaining)
		switch {
		case k < 1 || k > maxBatch:
			t.Fatalf("%d: K %d out of [1, %d]", i, k, maxBatch)
		case rate < hot && k != 1:
			t.Fatalf("%d: a cold key (rate %v < %v) got K %d", i, rate, hot, k)
		case remaining >= 0 && k > remaining/2+1:
			t.Fatalf("%d: K %d after a reply of %d remaining", i, k, remaining)
		}
		if rate >= hot {
			want := min(max(int64(math.Ceil(rate*life.Seconds())), 1), maxBatch)
			if remaining >= 0 {
				want = min(want, remaining/2+1)
			}
			if k != want {
				t.Fatalf("%d: Size(%v, %v, %v, %d, %d) = %d, want %d", i, rate, hot, life, maxBatch, remaining, k, want)
			}
		}
		if more := Size(rate*(1+rng.Float64()), hot, life, maxBatch, remaining); more < k {
			t.Fatalf("%d: a higher rate shrank K from %d to %d", i, k, more)
		}
		if remaining >= 0 {
			if more := Size(rate, hot, life, maxBatch, remaining+int64(rng.IntN(100))); more < k {
				t.Fatalf("%d: more remaining shrank K from %d to %d", i, k, more)
			}
		}
	}
}

// TestMeter: n decisions spread over one Lifetime read as n per
// Lifetime; a Lifetime later half of them have left the estimate (at the
// middle of the next slice), and two Lifetimes of silence read 0.
func TestMeter(t *testing.T) {
	life := 100 * time.Millisecond
	start := time.Unix(1_800_000_000, 0)
	var m Meter
	for i := range 100 {
		m.Add(start.Add(time.Duration(i)*time.Millisecond), life, 1)
	}
	if got := m.Rate(start.Add(99*time.Millisecond), life); got != 1000 {
		t.Fatalf("100 decisions in 100 ms read as %v per second, want 1000", got)
	}
	if got := m.Rate(start.Add(150*time.Millisecond), life); got != 500 {
		t.Fatalf("half a Lifetime later: %v per second, want 500", got)
	}
	if got := m.Rate(start.Add(300*time.Millisecond), life); got != 0 {
		t.Fatalf("two Lifetimes of silence: %v per second, want 0", got)
	}
	// A burst, then silence with no reading between: the burst is gone.
	var q Meter
	q.Add(start, life, 100)
	for _, gap := range []time.Duration{250, 1000, 60_000} {
		if got := q.Rate(start.Add(gap*time.Millisecond), life); got != 0 {
			t.Fatalf("a burst %v ms ago reads as %v per second, want 0", gap, got)
		}
	}
	q.Add(start.Add(60_050*time.Millisecond), life, 1)
	if got := q.Rate(start.Add(60_050*time.Millisecond), life); got != 10 {
		t.Fatalf("one decision after a minute of silence: %v per second, want 10", got)
	}
}

// TestBatchTake: a batch admits until its K units are used, never after
// its expiry, and gives back exactly what it did not admit.
func TestBatchTake(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 2))
	at := time.Unix(1_800_000_000, 0)
	for i := range 10_000 {
		b := Batch{K: int64(1 + rng.IntN(100)), Expires: at.Add(time.Second)}
		var took int64
		for range 200 {
			n := int64(1 + rng.IntN(5))
			now := at.Add(time.Duration(rng.IntN(1100)) * time.Millisecond)
			fits := b.Used+n <= b.K && now.Before(b.Expires)
			if got := b.Take(n, now); got != fits {
				t.Fatalf("%d: Take(%d) at %v of %+v = %v, want %v", i, n, now.Sub(at), b, got, fits)
			} else if got {
				took += n
			}
		}
		if b.Used != took || b.Unused() != b.K-took || b.Used > b.K {
			t.Fatalf("%d: %+v after taking %d: unused %d", i, b, took, b.Unused())
		}
	}
}

// server is the model of the server's side: one limit of max units, no
// refill; a reserve of k takes k when it has them, a settle gives back
// the unused.
type server struct{ left int64 }

// TestLeasesModel: several processes decide one key in random order
// through the rules (Meter, Size, Batch) against a limit of max units:
// K grows with the key's rate up to MaxBatch, shrinks toward 1 near the
// end (one process: the last batch is at most 3, since K <= Remaining/2
// + 1 leaves at most 1 unit, which the ordinary path takes), admissions never exceed the units debited, no decision is denied
// while the server holds a unit, and once every batch is given back the
// server has debited exactly the admissions.
func TestLeasesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 3))
	for round := range 200 {
		const life = 100 * time.Millisecond
		max := int64(500 + rng.IntN(20_000))
		maxBatch := int64(10 + rng.IntN(400))
		procs := 1 + rng.IntN(4)
		srv := server{left: max}
		type proc struct {
			m         Meter
			b         *Batch
			remaining int64
		}
		ps := make([]proc, procs)
		for i := range ps {
			ps[i].remaining = -1
		}
		now := time.Unix(1_800_000_000, 0)
		var admitted, reservedMax, lastK int64
		giveBack := func(p *proc) {
			if p.b != nil {
				srv.left += p.b.Unused()
				p.b = nil
			}
		}
		for step := 0; admitted < max+100 && step < int(max)*3; step++ {
			now = now.Add(time.Duration(rng.IntN(200)) * time.Microsecond)
			p := &ps[rng.IntN(procs)]
			p.m.Add(now, life, 1)
			if p.b != nil && p.b.Take(1, now) {
				admitted++
				continue
			}
			giveBack(p)
			k := Size(p.m.Rate(now, life), 50, life, maxBatch, p.remaining)
			if k > 1 && srv.left >= k {
				srv.left -= k
				p.remaining = srv.left
				p.b = &Batch{K: k, Expires: now.Add(life)}
				reservedMax, lastK = max64(reservedMax, k), k
				if !p.b.Take(1, now) {
					t.Fatalf("round %d: a fresh batch of %d did not admit 1", round, k)
				}
				admitted++
				continue
			}
			// The ordinary path: one unit, exactly.
			if k > 1 {
				lastK = k
			}
			held := int64(0)
			for i := range ps {
				if ps[i].b != nil {
					held += ps[i].b.Unused()
				}
			}
			if srv.left >= 1 {
				srv.left--
				admitted++
			} else if held == 0 && procs == 1 {
				// Denied: nothing is held anywhere, the server is empty.
				if admitted != max {
					t.Fatalf("round %d: denied after %d of %d admitted", round, admitted, max)
				}
			}
			p.remaining = srv.left
			if debited := max - srv.left; admitted > debited {
				t.Fatalf("round %d: %d admitted of %d debited", round, admitted, debited)
			}
		}
		for i := range ps {
			giveBack(&ps[i])
		}
		if max-srv.left != admitted {
			t.Fatalf("round %d: after every batch was given back the server debited %d, admitted %d", round, max-srv.left, admitted)
		}
		if admitted != max {
			t.Fatalf("round %d: %d admitted of a limit of %d, offered more", round, admitted, max)
		}
		if reservedMax < min(maxBatch, 100) {
			t.Fatalf("round %d: the largest batch was %d, MaxBatch %d: K did not grow", round, reservedMax, maxBatch)
		}
		if procs == 1 && lastK > 3 {
			t.Fatalf("round %d: the last batch size asked was %d: K did not shrink toward 1", round, lastK)
		}
	}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
