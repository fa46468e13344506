package login

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/embedded"
)

// TestLimitersAreTheLoginCase: every script's limiter admits the first
// attempt and denies a second within 5 s by the first limit; but for ar1
// (a decaying count, approximate), each admits four more 10 s apart and
// denies a sixth within the hour by the second limit (on the embedded
// engine: no server).
func TestLimitersAreTheLoginCase(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	client := embedded.New(embedded.Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	for name, l := range Limiters(t, client, ratelua.Options{Prefix: "fixture", Clock: func() time.Time { return now }}) {
		start := now
		r, err := l.Allow(ctx, name)
		if err != nil || !r.Allowed {
			t.Fatalf("%s: first attempt %+v %v, want admitted", name, r, err)
		}
		if r, err := l.Allow(ctx, name); err != nil || r.Allowed || r.Limit != 0 {
			t.Errorf("%s: second attempt at once %+v %v, want denied by limit 0", name, r, err)
		}
		if name == ratelua.AR1 {
			continue
		}
		for i := 2; i <= 5; i++ {
			now = now.Add(10 * time.Second)
			if r, err := l.Allow(ctx, name); err != nil || !r.Allowed {
				t.Errorf("%s: attempt %d at +%v %+v %v, want admitted", name, i, now.Sub(start), r, err)
			}
		}
		now = now.Add(10 * time.Second)
		if r, err := l.Allow(ctx, name); err != nil || r.Allowed || r.Limit != 1 {
			t.Errorf("%s: sixth attempt at +%v %+v %v, want denied by limit 1", name, now.Sub(start), r, err)
		}
		now = now.Add(2 * time.Hour)
	}
	if n := len(Scripts()); n != 4 {
		t.Errorf("%d scripts, want 4", n)
	}
}

// TestWireForms: the command line's and the packages' forms are Windows.
func TestWireForms(t *testing.T) {
	if got, want := WindowArgs(), []string{"1", "5000", "1000", "5", "3600000", "600000"}; !slices.Equal(got, want) {
		t.Errorf("WindowArgs %q, want %q", got, want)
	}
	got := WireLimits()
	if len(got) != 2 || got[0]["max"] != 1 || got[0]["duration_us"] != 5_000_000 || got[1]["resolution_us"] != 600_000_000 {
		t.Errorf("WireLimits %v", got)
	}
}
