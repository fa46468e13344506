package denycache

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

// deny has c store a denial of asked events of key decided at t0 with a
// wait of retry, through a call in flight.
func deny(t *testing.T, c *Cache, key string, asked int64, retry time.Duration) {
	t.Helper()
	_, gen, ok := c.Answer(key, asked, t0, time.Millisecond)
	if ok {
		t.Fatalf("%s answered locally before any denial", key)
	}
	d, ok := DenialOf(asked, t0, 0, retry, 2*retry, 0, 1)
	c.Settle(key, gen, false, d, ok)
}

// TestAnswersUntilTheServersTime: a stored denial is answered for the
// same number of events until its time, with the waits counted down and
// rounded up to the unit, and dropped at that time.
func TestAnswersUntilTheServersTime(t *testing.T) {
	c := New(10)
	deny(t, c, "k", 2, 10*time.Second)
	a, _, ok := c.Answer("k", 2, t0.Add(2500*time.Microsecond), time.Millisecond)
	if !ok || a.RetryAfter != 9998*time.Millisecond || a.ResetAfter != 19998*time.Millisecond || a.Limit != 1 {
		t.Fatalf("2.5 ms later: %+v %v, want RetryAfter 9.998s ResetAfter 19.998s Limit 1", a, ok)
	}
	if _, _, ok := c.Answer("k", 1, t0.Add(time.Second), time.Millisecond); ok {
		t.Error("a denial of 2 events answered a request of 1")
	}
	if _, _, ok := c.Answer("k", 2, t0.Add(10*time.Second), time.Millisecond); ok {
		t.Error("answered at the server's time")
	}
	if c.Len() != 0 {
		t.Errorf("%d denials held after the time of the only one", c.Len())
	}
}

// TestDenialInFlightDuringAChange: a denial whose call was in flight while
// its key's state changed (a reset, recorded events) is not stored; one
// of another key is.
func TestDenialInFlightDuringAChange(t *testing.T) {
	c := New(10)
	_, gen, _ := c.Answer("k", 1, t0, time.Millisecond)
	_, other, _ := c.Answer("o", 1, t0, time.Millisecond)
	c.Changed("k")
	d, ok := DenialOf(1, t0, 0, time.Minute, time.Minute, 0, 0)
	c.Settle("k", gen, false, d, ok)
	c.Settle("o", other, false, d, ok)
	if _, _, ok := c.Answer("k", 1, t0, time.Millisecond); ok {
		t.Error("a denial in flight across a change was stored")
	}
	if _, _, ok := c.Answer("o", 1, t0, time.Millisecond); !ok {
		t.Error("a denial of a key that did not change was not stored")
	}
}

// TestRecordedEventsDropTheDenial: a call that recorded events (or got
// no answer) drops every denial of its key, and a denial in flight beside
// it is not stored.
func TestRecordedEventsDropTheDenial(t *testing.T) {
	c := New(10)
	deny(t, c, "k", 2, time.Minute)
	_, admitted, _ := c.Answer("k", 1, t0, time.Millisecond)
	_, denied, _ := c.Answer("k", 3, t0, time.Millisecond)
	c.Settle("k", admitted, true, Denial{}, false)
	if _, _, ok := c.Answer("k", 2, t0, time.Millisecond); ok {
		t.Error("an admission of the key left its denial of 2 events")
	}
	d, ok := DenialOf(3, t0, 0, time.Minute, time.Minute, 0, 0)
	c.Settle("k", denied, false, d, ok)
	if _, _, ok := c.Answer("k", 3, t0, time.Millisecond); ok {
		t.Error("a denial in flight while the key admitted was stored")
	}
}

// TestDenialOfSlack: the slack is taken off both times, and a denial
// whose time is not after its decision is not stored.
func TestDenialOfSlack(t *testing.T) {
	d, ok := DenialOf(1, t0, time.Millisecond, time.Second, 2*time.Second, 3, 1)
	if !ok || !d.Until.Equal(t0.Add(999*time.Millisecond)) || !d.ResetAt.Equal(t0.Add(1999*time.Millisecond)) || d.Remaining != 3 {
		t.Errorf("%+v %v", d, ok)
	}
	if _, ok := DenialOf(1, t0, time.Millisecond, time.Millisecond, time.Second, 0, 0); ok {
		t.Error("a wait of one unit less its slack of one unit was stored")
	}
}

func TestRoundUp(t *testing.T) {
	for _, c := range []struct{ d, unit, want time.Duration }{
		{-time.Second, time.Millisecond, 0},
		{0, time.Millisecond, 0},
		{time.Microsecond, time.Millisecond, time.Millisecond},
		{time.Millisecond, time.Millisecond, time.Millisecond},
		{1001 * time.Microsecond, time.Millisecond, 2 * time.Millisecond},
		{1500 * time.Millisecond, time.Second, 2 * time.Second},
	} {
		if got := RoundUp(c.d, c.unit); got != c.want {
			t.Errorf("RoundUp(%v, %v) = %v, want %v", c.d, c.unit, got, c.want)
		}
	}
}

// TestBoundsUnderConcurrency: many goroutines deny, answer, change and
// settle keys at once (run with -race): the cache never holds more than
// its bound, and no call is left in flight once every one is settled.
func TestBoundsUnderConcurrency(t *testing.T) {
	c := New(4)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				key := fmt.Sprint("k", (w+i)%13)
				if i%17 == 0 {
					c.Changed(key)
				}
				_, gen, ok := c.Answer(key, int64(1+i%2), t0, time.Millisecond)
				if ok {
					continue
				}
				d, denied := DenialOf(int64(1+i%2), t0, 0, time.Hour, time.Hour, 0, 0)
				c.Settle(key, gen, i%3 == 0, d, denied && i%3 != 0)
				if n := c.Len(); n > 4 {
					t.Errorf("%d keys held, bound 4", n)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := c.Len(); n == 0 || n > 4 {
		t.Errorf("%d keys held after the run, want 1 to 4", n)
	}
	if n := c.Flights(); n != 0 {
		t.Errorf("%d keys in flight after every call was settled", n)
	}
}
