package generate

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/ratelua/ratelua"
)

// noClient is a Client the key vectors never call: they only build keys
// and ARGV.
type noClient struct{}

var errNoClient = errors.New("generate: the key vectors call no server")

func (noClient) Run(context.Context, ratelua.Call, []int64) error { return errNoClient }

// keyVector is one limiter configuration and call, and what the Go API
// makes of it: the state key and the ARGV it sends, or the field it
// refuses.
type keyVector struct {
	Script      string           `json:"script"`
	Limits      []map[string]any `json:"limits"`
	Prefix      string           `json:"prefix"`
	CountDenied bool             `json:"count_denied"`
	EventKeyHex string           `json:"event_key_hex"`
	NowUS       int64            `json:"now_us"`
	N           int64            `json:"n"`
	// Version is ratelua.Options.Version: 0 (left out) is the newest, the
	// default of every language.
	Version int      `json:"version,omitempty"`
	KeyHex  string   `json:"key_hex,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Error, when the Go API refuses the limits: which limit (-1 for
	// none) and which field.
	Error *vectorError `json:"error,omitempty"`
}

type vectorError struct {
	Index int    `json:"index"`
	Field string `json:"field"`
}

// vectorEventKeys are the event keys every configuration is tried with:
// braces, '%', NUL, non-ASCII and invalid UTF-8, 0 to 400 bytes, around
// the 128-byte bound where the digest takes over.
func vectorEventKeys() []string {
	keys := []string{
		"", "a", "user:42", "{", "}", "{}", "%", "%7B", "%H", "a{b}c", "{user}:x",
		"\x00", "a\x00b", "é", "ユーザー", "\xff\xfe", "emoji 🙂 {x}",
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129),
		strings.Repeat("{", 42), strings.Repeat("{", 43), strings.Repeat("%", 42) + "ab",
		strings.Repeat("é", 64), strings.Repeat("é", 65), strings.Repeat("x", 400),
		strings.Repeat("}\x00", 200),
	}
	r := rand.New(rand.NewPCG(23, 5))
	alphabet := []byte("ab{}%\x00\xc3\xa9:Z")
	for range 12 {
		b := make([]byte, r.IntN(401))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		keys = append(keys, string(b))
	}
	return keys
}

// vectorLimits returns count random valid limits of script, in the
// vectors' form (durations in microseconds) and as the Go constructor's
// arguments.
func vectorLimits(r *rand.Rand, script string, count int, micro bool) ([]map[string]any, func(ratelua.Options) (*ratelua.Limiter, error)) {
	durations := []time.Duration{time.Second, 5 * time.Second, time.Minute, time.Hour, 24 * time.Hour, 250 * time.Millisecond, 1500 * time.Millisecond}
	dur := func() time.Duration {
		d := durations[r.IntN(len(durations))]
		if micro && r.IntN(2) == 0 {
			d += 7 * time.Microsecond
		}
		return d
	}
	us := func(d time.Duration) int64 { return d.Microseconds() }
	var out []map[string]any
	switch script {
	case "sliding_window":
		var ws []ratelua.Window
		for range count {
			d := dur()
			w := ratelua.Window{Max: 1 + r.Int64N(1000), Duration: d, Resolution: d / time.Duration(1+r.IntN(20))}
			w.Resolution -= w.Resolution % time.Microsecond
			ws = append(ws, w)
			out = append(out, map[string]any{"max": w.Max, "duration_us": us(w.Duration), "resolution_us": us(w.Resolution)})
		}
		return out, func(o ratelua.Options) (*ratelua.Limiter, error) {
			return ratelua.NewSlidingWindow(noClient{}, o, ws...)
		}
	case "token_bucket":
		var bs []ratelua.Bucket
		for range count {
			b := ratelua.Bucket{Capacity: 1 + r.Int64N(1000), RefillAmount: 1 + r.Int64N(100), RefillInterval: dur()}
			bs = append(bs, b)
			out = append(out, map[string]any{"capacity": b.Capacity, "refill_amount": b.RefillAmount, "refill_interval_us": us(b.RefillInterval)})
		}
		return out, func(o ratelua.Options) (*ratelua.Limiter, error) { return ratelua.NewTokenBucket(noClient{}, o, bs...) }
	case "zset_log":
		var ls []ratelua.Log
		for range count {
			g := ratelua.Log{Max: 1 + r.Int64N(1000), Window: dur()}
			ls = append(ls, g)
			out = append(out, map[string]any{"max": g.Max, "window_us": us(g.Window)})
		}
		return out, func(o ratelua.Options) (*ratelua.Limiter, error) { return ratelua.NewZSetLog(noClient{}, o, ls...) }
	default: // ar1
		factors := []float64{2, 1.5, 1.001, 1.1, 10, 3.333}
		var ds []ratelua.Decay
		for range count {
			d := ratelua.Decay{Max: 1 + r.Int64N(1000), Factor: factors[r.IntN(len(factors))], Resolution: dur()}
			ds = append(ds, d)
			out = append(out, map[string]any{"max": d.Max, "factor": d.Factor, "resolution_us": us(d.Resolution)})
		}
		return out, func(o ratelua.Options) (*ratelua.Limiter, error) { return ratelua.NewAR1(noClient{}, o, ds...) }
	}
}

// concurrencyVectors are the semaphores' keys and acquire ARGV (their own
// random source, so that the other vectors stay as they were).
func concurrencyVectors(eventKeys, prefixes []string) ([]keyVector, error) {
	r := rand.New(rand.NewPCG(23, 17))
	leases := []time.Duration{time.Second, 30 * time.Second, time.Minute, 250 * time.Millisecond, 1500*time.Millisecond + 7*time.Microsecond, 10 * time.Hour}
	var out []keyVector
	for i, eventKey := range eventKeys {
		slots := ratelua.Slots{Max: 1 + r.Int64N(1_000_000), Lease: leases[r.IntN(len(leases))]}
		prefix := prefixes[r.IntN(len(prefixes))]
		n := []int64{1, 0, -1, 3, 1 << 40}[i%5]
		now := time.UnixMicro(1_700_000_000_000_000 + r.Int64N(1e12))
		s, err := ratelua.NewConcurrency(noClient{}, ratelua.Options{Prefix: prefix, Clock: func() time.Time { return now }}, slots)
		if err != nil {
			return nil, fmt.Errorf("generate: %+v: %w", slots, err)
		}
		out = append(out, keyVector{
			Script: "concurrency", Limits: []map[string]any{{"max": slots.Max, "lease_us": slots.Lease.Microseconds()}},
			Prefix: prefix, EventKeyHex: hex.EncodeToString([]byte(eventKey)), NowUS: now.UnixMicro(), N: n,
			KeyHex: hex.EncodeToString([]byte(s.Key(eventKey))), Args: s.Args(n),
		})
	}
	return out, nil
}

// versionVectors are limiters pinned to every released script version
// (ratelua.Options.Version), with their own random source so that the other
// vectors stay as they were. Each configuration is also built at the
// default version, which must be the newest.
func versionVectors(eventKeys, prefixes []string) ([]keyVector, error) {
	r := rand.New(rand.NewPCG(23, 29))
	versions := map[string][]int{}
	for _, s := range ratelua.NewRegistry().All() {
		versions[s.Name] = append(versions[s.Name], s.Version)
	}
	var out []keyVector
	for _, script := range []string{"sliding_window", "token_bucket", "zset_log", "ar1", "concurrency"} {
		if len(versions[script]) < 2 {
			return nil, fmt.Errorf("generate: %s: versions %v: the vectors pin each of several versions", script, versions[script])
		}
		for _, version := range versions[script] {
			for i := range 4 {
				eventKey := eventKeys[r.IntN(len(eventKeys))]
				prefix := prefixes[r.IntN(len(prefixes))]
				n := []int64{1, 0, -1, 3}[i]
				now := time.UnixMicro(1_700_000_000_000_000 + r.Int64N(1e12))
				opts := ratelua.Options{Prefix: prefix, Clock: func() time.Time { return now }, Version: version}
				v := keyVector{Script: script, Prefix: prefix, EventKeyHex: hex.EncodeToString([]byte(eventKey)), NowUS: now.UnixMicro(), N: n, Version: version}
				var key, defaultKey string
				if script == "concurrency" {
					slots := ratelua.Slots{Max: 1 + r.Int64N(1000), Lease: time.Duration(1+r.IntN(600)) * 100 * time.Millisecond}
					v.Limits = []map[string]any{{"max": slots.Max, "lease_us": slots.Lease.Microseconds()}}
					s, err := ratelua.NewConcurrency(noClient{}, opts, slots)
					if err != nil {
						return nil, fmt.Errorf("generate: %s v%d: %w", script, version, err)
					}
					d, err := ratelua.NewConcurrency(noClient{}, ratelua.Options{Prefix: prefix}, slots)
					if err != nil {
						return nil, fmt.Errorf("generate: %s v%d: %w", script, version, err)
					}
					key, defaultKey, v.Args = s.Key(eventKey), d.Key(eventKey), s.Args(n)
				} else {
					limits, newLimiter := vectorLimits(r, script, 1+r.IntN(3), r.IntN(2) == 0)
					v.Limits = limits
					v.CountDenied = r.IntN(3) == 0
					opts.CountDenied = v.CountDenied
					l, err := newLimiter(opts)
					if err != nil {
						return nil, fmt.Errorf("generate: %s v%d: %w", script, version, err)
					}
					d, err := newLimiter(ratelua.Options{Prefix: prefix})
					if err != nil {
						return nil, fmt.Errorf("generate: %s v%d: %w", script, version, err)
					}
					key, defaultKey, v.Args = l.Key(eventKey), d.Key(eventKey), l.Args(n)
				}
				newest := version == slices.Max(versions[script])
				if (key == defaultKey) != newest {
					mine, err := stateVersionOf(script, version)
					if err != nil {
						return nil, err
					}
					newestState, err := stateVersionOf(script, slices.Max(versions[script]))
					if err != nil {
						return nil, err
					}
					if mine != newestState {
						return nil, fmt.Errorf("generate: %s v%d: key %q, default key %q: the default must be the newest version", script, version, key, defaultKey)
					}
				}
				v.KeyHex = hex.EncodeToString([]byte(key))
				out = append(out, v)
			}
		}
	}
	return out, nil
}

// stateVersionOf is the state version of script@version.
func stateVersionOf(script string, version int) (int, error) {
	s, err := ratelua.NewRegistry().Lookup(script, version)
	if err != nil {
		return 0, fmt.Errorf("generate: %w", err)
	}
	if s.StateVersion > 0 {
		return s.StateVersion, nil
	}
	return s.Version, nil
}

// invalidVectors are limits the Go API refuses, with the field it names.
func invalidVectors() []keyVector {
	v := func(script string, limits ...map[string]any) keyVector {
		return keyVector{Script: script, Limits: limits, Prefix: "ratelua", N: 1}
	}
	return []keyVector{
		v("sliding_window", map[string]any{"max": 0, "duration_us": 1_000_000, "resolution_us": 100_000}),
		v("sliding_window", map[string]any{"max": 1_000_000_001, "duration_us": 1_000_000, "resolution_us": 100_000}),
		v("sliding_window", map[string]any{"max": 5, "duration_us": 1_000_000, "resolution_us": 2_000_000}),
		v("sliding_window", map[string]any{"max": 5, "duration_us": 1_000_000, "resolution_us": 99}),
		v("sliding_window", map[string]any{"max": 5, "duration_us": 0, "resolution_us": 0}),
		v("sliding_window", map[string]any{"max": 5, "duration_us": 1_000_000, "resolution_us": 100_000}, map[string]any{"max": -1, "duration_us": 1_000_000, "resolution_us": 100_000}),
		v("token_bucket", map[string]any{"capacity": 10, "refill_amount": 0, "refill_interval_us": 1_000_000}),
		v("token_bucket", map[string]any{"capacity": 1_000_000_000, "refill_amount": 1, "refill_interval_us": 86_400_000_000}),
		v("zset_log", map[string]any{"max": 10_001, "window_us": 1_000_000}),
		v("ar1", map[string]any{"max": 5, "factor": 1.0, "resolution_us": 1_000_000}),
		v("ar1", map[string]any{"max": 5, "factor": 1.0005, "resolution_us": 1_000_000}),
		v("concurrency", map[string]any{"max": 0, "lease_us": 1_000_000}),
		v("concurrency", map[string]any{"max": 1_000_001, "lease_us": 1_000_000}),
		v("concurrency", map[string]any{"max": 5, "lease_us": 0}),
	}
}

// build constructs the limiter of an invalid vector (a semaphore's
// limiter is nil).
func (v keyVector) build(o ratelua.Options) (*ratelua.Limiter, error) {
	d := func(m map[string]any, k string) time.Duration {
		return time.Duration(toInt(m[k])) * time.Microsecond
	}
	switch v.Script {
	case "concurrency":
		_, err := ratelua.NewConcurrency(noClient{}, o, ratelua.Slots{Max: toInt(v.Limits[0]["max"]), Lease: d(v.Limits[0], "lease_us")})
		return nil, err
	case "sliding_window":
		var ws []ratelua.Window
		for _, m := range v.Limits {
			ws = append(ws, ratelua.Window{Max: toInt(m["max"]), Duration: d(m, "duration_us"), Resolution: d(m, "resolution_us")})
		}
		return ratelua.NewSlidingWindow(noClient{}, o, ws...)
	case "token_bucket":
		var bs []ratelua.Bucket
		for _, m := range v.Limits {
			bs = append(bs, ratelua.Bucket{Capacity: toInt(m["capacity"]), RefillAmount: toInt(m["refill_amount"]), RefillInterval: d(m, "refill_interval_us")})
		}
		return ratelua.NewTokenBucket(noClient{}, o, bs...)
	case "zset_log":
		var ls []ratelua.Log
		for _, m := range v.Limits {
			ls = append(ls, ratelua.Log{Max: toInt(m["max"]), Window: d(m, "window_us")})
		}
		return ratelua.NewZSetLog(noClient{}, o, ls...)
	}
	var ds []ratelua.Decay
	for _, m := range v.Limits {
		ds = append(ds, ratelua.Decay{Max: toInt(m["max"]), Factor: m["factor"].(float64), Resolution: d(m, "resolution_us")})
	}
	return ratelua.NewAR1(noClient{}, o, ds...)
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

// keyVectors builds every vector from the Go API.
func keyVectors() ([]keyVector, error) {
	r := rand.New(rand.NewPCG(23, 16))
	prefixes := []string{"ratelua", "app:login", "x"}
	eventKeys := vectorEventKeys()
	var out []keyVector
	for _, script := range []string{"sliding_window", "token_bucket", "zset_log", "ar1"} {
		for _, count := range []int{1, 2, 3, 5, 16} {
			for _, micro := range []bool{false, true} {
				limits, newLimiter := vectorLimits(r, script, count, micro)
				now := time.UnixMicro(1_700_000_000_000_000 + r.Int64N(1e12))
				for i, eventKey := range eventKeys {
					// Every event key with one configuration, a few per
					// other configuration.
					if !(count == 2 && !micro) && i%7 != count%7 {
						continue
					}
					prefix := prefixes[r.IntN(len(prefixes))]
					countDenied := r.IntN(3) == 0
					n := []int64{1, 0, -1, 3, 1 << 40}[r.IntN(5)]
					l, err := newLimiter(ratelua.Options{Prefix: prefix, CountDenied: countDenied, Clock: func() time.Time { return now }})
					if err != nil {
						return nil, fmt.Errorf("generate: %s %v: %w", script, limits, err)
					}
					out = append(out, keyVector{
						Script: script, Limits: limits, Prefix: prefix, CountDenied: countDenied,
						EventKeyHex: hex.EncodeToString([]byte(eventKey)), NowUS: now.UnixMicro(), N: n,
						KeyHex: hex.EncodeToString([]byte(l.Key(eventKey))), Args: l.Args(n),
					})
				}
			}
		}
	}
	cv, err := concurrencyVectors(eventKeys, prefixes)
	if err != nil {
		return nil, err
	}
	vv, err := versionVectors(eventKeys, prefixes)
	if err != nil {
		return nil, err
	}
	out = append(append(out, cv...), vv...)
	for _, v := range invalidVectors() {
		_, err := v.build(ratelua.Options{Prefix: v.Prefix})
		var le *ratelua.LimitError
		if !errors.As(err, &le) {
			return nil, fmt.Errorf("generate: %s %v: want a LimitError, got %w", v.Script, v.Limits, err)
		}
		v.Error = &vectorError{Index: le.Index, Field: le.Field}
		out = append(out, v)
	}
	return out, nil
}

// KeyVectors returns testdata/keyvectors.json, the state keys and ARGV of
// the Go API that the Python and Node packages must reproduce, after
// checking that the vectors cover every script, 400-byte event keys, keys
// long enough for the digest and 16 limits.
func KeyVectors() ([]byte, error) {
	vectors, err := keyVectors()
	if err != nil {
		return nil, err
	}
	// What the vectors must cover.
	var long, withDigest, sixteen int
	scripts := map[string]bool{}
	for _, v := range vectors {
		scripts[v.Script] = true
		if len(v.EventKeyHex) >= 800 {
			long++
		}
		if strings.Contains(v.KeyHex, hex.EncodeToString([]byte("{%H"))) {
			withDigest++
		}
		if len(v.Limits) == 16 {
			sixteen++
		}
	}
	if len(scripts) != 5 || long == 0 || withDigest == 0 || sixteen == 0 {
		return nil, fmt.Errorf("generate: the key vectors miss a case: scripts %v, 400-byte keys %d, digests %d, 16 limits %d", slices.Sorted(maps.Keys(scripts)), long, withDigest, sixteen)
	}
	out, err := json.MarshalIndent(map[string]any{
		"comment": "Code generated by luagen (make generate) from the Go API; DO NOT EDIT. For each limiter configuration and call, the state key and the ARGV the Go API sends, or the limit and field it refuses. Durations in microseconds; keys as hex bytes.",
		"vectors": vectors,
	}, "", " ")
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	return append(out, '\n'), nil
}
