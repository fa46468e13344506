package reference

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratelua/ratelua/testbench"
)

// sharedCase is one descriptor of testdata/shared and its rule: limit
// hits per unit of seconds, and the reference's key of its counter in a
// window, written out by hand (entries as key_value_ pairs).
type sharedCase struct {
	name    string
	entries [][2]string // of each request, in turn (a share_threshold rule's values vary)
	limit   int
	unit    int64  // seconds
	keyPart string // the key without the window start
	windows int    // windows to run
}

// sharedPrefix is both services' CACHE_KEY_PREFIX, which starts the
// reference's keys as given.
const sharedPrefix = "fleet_"

// TestSharedCountersAgainstReference is issue 33's mixed fleet: the
// reference (envoyproxy/ratelimit, its pinned version) and ratelua-rls
// (RATELUA_SHARE_REFERENCE_COUNTERS at its default) on ONE server, a
// single node and a six-node cluster of redis-server and valkey-server.
// The requests of every window go alternately to one and the other on the
// same descriptors (a second, a minute and an hour rule, a nested one, a
// share_threshold one whose values alternate too): the OK answers across
// both services are exactly the limit per window, each service admits and
// denies some; the counter holds every hit sent (both count denied hits);
// its TTL is at most the unit's seconds; CACHE_KEY_PREFIX starts every key; (the reference's EXPIRE, its
// jitter set to 0 here); and every key on the server is a reference key of
// a window the test ran.
func TestSharedCountersAgainstReference(t *testing.T) {
	bins, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	cases := []sharedCase{
		{name: "second", entries: [][2]string{{"user", "u1"}}, limit: 3, unit: 1, keyPart: "mixed_user_u1_", windows: 3},
		{name: "minute", entries: [][2]string{{"org", "acme"}}, limit: 5, unit: 60, keyPart: "mixed_org_acme_", windows: 1},
		{name: "nested hour", entries: [][2]string{{"client_id", "acme"}, {"path", "/login"}}, limit: 4, unit: 3600, keyPart: "mixed_client_id_acme_path_/login_", windows: 1},
		{name: "share_threshold", entries: [][2]string{{"tenant", "t1"}}, limit: 4, unit: 60, keyPart: "mixed_tenant_t*_", windows: 1},
	}
	type topology struct {
		name    string
		kind    testbench.Kind
		cluster bool
	}
	for _, top := range []topology{{"single redis", testbench.Redis, false}, {"single valkey", testbench.Valkey, false},
		{"cluster redis", testbench.Redis, true}, {"cluster valkey", testbench.Valkey, true}} {
		t.Run(top.name, func(t *testing.T) {
			var url string
			var masters []*testbench.Node
			if top.cluster {
				c := testbench.Start(t, testbench.Options{Kind: top.kind})
				url, masters = strings.Join(c.Addrs(), ","), c.Masters()
			} else {
				n := testbench.StartSingle(t, testbench.Options{Kind: top.kind})
				url, masters = n.Addr, []*testbench.Node{n}
			}
			ref := startService(t, "reference", bins["reference"], "testdata/shared", url, top.cluster, "EXPIRATION_JITTER_MAX_SECONDS=0", "CACHE_KEY_PREFIX="+sharedPrefix)
			ours := startService(t, "ratelua-rls", bins["ratelua-rls"], "testdata/shared", url, top.cluster, "CACHE_KEY_PREFIX="+sharedPrefix)
			expected := map[string]bool{}
			requests, windows, retries := 0, 0, 0
			for _, c := range cases {
				last := int64(-1)
				for w := 0; w < c.windows; w++ {
					var r burst
					for attempt := 0; ; attempt++ {
						if attempt == 20 {
							t.Fatalf("%s: 20 bursts in a row straddled a window", c.name)
						}
						// A burst starts in a window no request touched yet:
						// after one that filled the counter (or straddled
						// into the next window), the next one (a clock
						// reading, not a wait on either service).
						for time.Now().Unix()/c.unit*c.unit == last {
							time.Sleep(5 * time.Millisecond)
						}
						r = runBurst(t, ref, ours, c)
						last = r.end // a straddling burst counted in the window it ended in too
						if r.ok {
							break
						}
						retries++
					}
					key := sharedPrefix + c.keyPart + strconv.FormatInt(r.window, 10)
					expected[key] = true
					requests += r.sent
					windows++
					if r.admitted != c.limit {
						t.Fatalf("%s window %d: %d admitted across both services, want exactly the limit %d (per service %v)", c.name, r.window, r.admitted, c.limit, r.byService)
					}
					for _, s := range []string{"reference", "ratelua-rls"} {
						if r.byService[s] == 0 || r.deniedBy[s] == 0 {
							t.Fatalf("%s window %d: %s admitted %d and denied %d: want some of each (the services alternate)", c.name, r.window, s, r.byService[s], r.deniedBy[s])
						}
					}
					if c.unit >= 60 {
						count, ttl := readCounter(t, masters, key)
						if count != strconv.Itoa(r.sent) {
							t.Fatalf("%s: counter %s = %q, want %d, every hit sent to either service (keys %q)", c.name, key, count, r.sent, allKeys(t, masters))
						}
						if ttl < 1 || ttl > c.unit {
							t.Fatalf("%s: TTL of %s is %d s, want 1 to %d (EXPIRE by the unit's seconds)", c.name, key, ttl, c.unit)
						}
					}
				}
			}
			for _, k := range allKeys(t, masters) {
				if !expected[k] {
					t.Fatalf("key %q on the server is not a reference key of the windows run (%v)", k, expected)
				}
			}
			t.Logf("%d requests in %d windows, alternated between the reference and ratelua-rls on one server: exactly the limit admitted in each; %d bursts run again (straddling a window)", requests, windows, retries)
			reportCases(fmt.Sprintf("shared counters with the reference (%s): %d requests in %d windows on one server, exactly each limit admitted across both, only the reference's keys", top.name, requests, windows))
		})
	}
}

// burst is what one window's requests got.
type burst struct {
	ok                  bool  // every request was sent and answered inside one window
	window, end         int64 // the start of the window of the first request and of the last answer, Unix seconds
	sent, admitted      int
	byService, deniedBy map[string]int
}

// runBurst sends 2 * limit + 2 requests of one hit for c's descriptor,
// alternately to ref and ours, and counts the answers, if all of them lay
// in one window of c's unit by the test's clock (the services read the
// same clock, between the test's two readings).
func runBurst(t *testing.T, ref, ours *service, c sharedCase) burst {
	t.Helper()
	b := burst{byService: map[string]int{}, deniedBy: map[string]int{}}
	start := time.Now().Unix() / c.unit * c.unit
	for i := 0; i < 2*c.limit+2; i++ {
		s := []*service{ref, ours}[i%2]
		d := &rlpb.RateLimitDescriptor{}
		for _, e := range c.entries {
			v := e[1]
			if c.name == "share_threshold" {
				v = "t" + strconv.Itoa(i%3+1) // t1, t2, t3 share one counter
			}
			d.Entries = append(d.Entries, &rlpb.RateLimitDescriptor_Entry{Key: e[0], Value: v})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := s.client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "mixed", Descriptors: []*rlpb.RateLimitDescriptor{d}})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		b.sent++
		if resp.OverallCode == pb.RateLimitResponse_OK {
			b.admitted++
			b.byService[s.name]++
		} else {
			b.deniedBy[s.name]++
		}
	}
	b.window, b.end = start, time.Now().Unix()/c.unit*c.unit
	b.ok = b.end == start
	return b
}

// allKeys lists the keys of every master.
func allKeys(t *testing.T, masters []*testbench.Node) []string {
	t.Helper()
	var out []string
	for _, m := range masters {
		v, err := m.Do(context.Background(), "KEYS", "*")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range v.([]any) {
			out = append(out, k.(string))
		}
	}
	return out
}

// readCounter returns key's value and TTL in seconds from the master that
// holds it.
func readCounter(t *testing.T, masters []*testbench.Node, key string) (string, int64) {
	t.Helper()
	ctx := context.Background()
	for _, m := range masters {
		n, err := m.Do(ctx, "EXISTS", key)
		if err != nil || n.(int64) == 0 {
			continue
		}
		v, err := m.Do(ctx, "GET", key)
		if err != nil {
			t.Fatal(err)
		}
		ttl, err := m.Do(ctx, "TTL", key)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := v.(string)
		return s, ttl.(int64)
	}
	return "", -2
}
