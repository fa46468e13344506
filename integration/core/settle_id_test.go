package core

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// TestSettleIDOnServers: a reservation is settled by its id from another
// Limiter (another process of a fleet, as ratelua-rls's replicas): the
// unused part given back, once however often the settle is sent; an
// overrun charged into debt; an id not held (unknown, settled) writes
// nothing and says so; a bad id, a bad actual or a script without
// reservations is refused before anything is sent.
func TestSettleIDOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		fc := &faultClient{Client: ratelua.Rueidis(client)}
		a, _ := reserveLimiter(t, fc, "sid-"+t.Name(), ratelua.Options{})
		b, _ := reserveLimiter(t, fc, "sid-"+t.Name(), ratelua.Options{})
		r := reserveOK(t, a, "k", 6)
		for i := range 3 {
			res, held, err := b.SettleID(ctx, "k", r.ID(), 2)
			if err != nil || held != (i == 0) || res.Remaining != 8 {
				t.Fatalf("settle %d of 2 of 6 by id: %+v held %v, %v; want remaining 8, held only the first time", i, res, held, err)
			}
		}
		r2 := reserveOK(t, a, "k", 3)
		res, held, err := b.SettleID(ctx, "k", r2.ID(), 13)
		if err != nil || !held || res.Allowed || remaining(t, a, "k") != 0 {
			t.Fatalf("settle 13 of 3 by id: %+v held %v, %v; want held, and the bucket in debt", res, held, err)
		}
		if _, held, err := b.SettleID(ctx, "k", r2.ID()+1, 1); err != nil || held {
			t.Fatalf("an id never reserved: held %v, %v", held, err)
		}
		sent := fc.sent.Load()
		for _, c := range []struct {
			id, actual int64
			field      string
		}{{0, 1, "id"}, {1 << 53, 1, "id"}, {5, -1, "actual"}, {5, 1<<52 + 1, "actual"}} {
			var le *ratelua.LimitError
			if _, _, err := b.SettleID(ctx, "k", c.id, c.actual); !errors.As(err, &le) || le.Field != c.field {
				t.Errorf("SettleID(%d, %d): %v, want a *LimitError naming %s", c.id, c.actual, err, c.field)
			}
		}
		w, err := ratelua.NewAR1(fc, ratelua.Options{Prefix: "sid"}, ratelua.Decay{Max: 5, Factor: 2, Resolution: 60e9})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := w.SettleID(ctx, "k", 5, 1); !errors.Is(err, ratelua.ErrNotSupported) {
			t.Errorf("SettleID on ar1: %v, want ErrNotSupported", err)
		}
		if fc.sent.Load() != sent {
			t.Fatalf("refused settles sent %d calls", fc.sent.Load()-sent)
		}
	})
}
