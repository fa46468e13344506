package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// parseOne parses y as the file x.yaml.
func parseOne(y string) (*Config, error) {
	return Parse([]File{{Name: "x.yaml", Data: []byte(y)}}, ParseOptions{})
}

// TestReferenceRulesTakeAnyUint32 (issue 33 row 7): a reference rule's
// requests_per_unit loads at every edge of the reference's uint32, in
// every unit (a value above 999,999,999 was refused, and with it the whole
// directory); one past it is refused with its line, as the reference
// refuses it; a descriptor's own limit of 2^32-1 passes CheckRule.
func TestReferenceRulesTakeAnyUint32(t *testing.T) {
	for _, unit := range []string{"second", "minute", "hour", "day", "week", "month", "year"} {
		for _, rpu := range []uint32{0, 1, 999_999_999, 1_000_000_000, 4_294_967_295} {
			c, err := parseOne(fmt.Sprintf("domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: %s, requests_per_unit: %d}\n", unit, rpu))
			if err != nil {
				t.Fatalf("%s %d: %v", unit, rpu, err)
			}
			r := c.Rules[0]
			if !r.Reference() || r.Limits[0].RequestsPerUnit != rpu || !strings.EqualFold(r.Limits[0].Unit.String(), unit) {
				t.Fatalf("%s %d loaded as %+v", unit, rpu, r)
			}
		}
	}
	if _, err := parseOne("domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 4294967296}\n"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "x.yaml:4:") {
		t.Fatalf("2^32: error %v, want one with its line", err)
	}
	override := &Rule{Key: "override", Limits: []Limit{{RequestsPerUnit: 4_294_967_295, Unit: pb.RateLimitResponse_RateLimit_SECOND}}}
	if err := CheckRule(override); err != nil {
		t.Fatalf("an override of 2^32-1: %v", err)
	}
}

// TestExtensionBounds: an extension rule's limits keep the scripts'
// bounds, each refused with its line and what was wrong; the bounds
// themselves load.
func TestExtensionBounds(t *testing.T) {
	rule := func(fields string) string {
		return "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {" + fields + "}\n"
	}
	for _, c := range []struct{ fields, want string }{
		{"unit: minute, requests_per_unit: 1000000001, algorithm: sliding_window", "requests_per_unit 1000000001 is above 1000000000, the most algorithm sliding_window takes"},
		{"unit: minute, requests_per_unit: 4294967295, algorithm: fixed_window", "requests_per_unit 4294967295 is above 1000000000, the most algorithm fixed_window takes"},
		{"unit: minute, requests_per_unit: 10001, algorithm: zset_log", "requests_per_unit 10001 is above 10000, the most algorithm zset_log takes"},
		{"unit: minute, requests_per_unit: 1000000001, algorithm: ar1", "requests_per_unit 1000000001 is above 1000000000, the most algorithm ar1 takes"},
		{"unit: year, requests_per_unit: 1000000, algorithm: token_bucket", "a token_bucket of 1000000 tokens refilled over 8760h0m0s is beyond the script's bound"},
		{"unit: minute, requests_per_unit: 0, algorithm: token_bucket", "requests_per_unit 0 is allowed in a reference rule only"},
	} {
		_, err := parseOne(rule(c.fields))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "x.yaml:4: "+c.want) {
			t.Errorf("{%s}: error %v, want %q", c.fields, err, c.want)
		}
	}
	for _, fields := range []string{
		"unit: minute, requests_per_unit: 1000000000, algorithm: sliding_window",
		"unit: minute, requests_per_unit: 10000, algorithm: zset_log",
		"unit: day, requests_per_unit: 13000000, algorithm: token_bucket",
		"unit: second, requests_per_unit: 1000000000, algorithm: ar1",
	} {
		if _, err := parseOne(rule(fields)); err != nil {
			t.Errorf("{%s}: %v", fields, err)
		}
	}
}

// TestDurations (issue 33 row 8): an extension limit's window is any
// whole number of milliseconds (duration), in rate_limit and in limits;
// the reply's unit is the unit of that length, or UNKNOWN; duration makes
// an extension rule (fixed_window unless an algorithm is given).
func TestDurations(t *testing.T) {
	c, err := parseOne(`domain: a
descriptors:
  - key: k
    rate_limit:
      requests_per_unit: 10
      duration: 30s
      limits:
        - {requests_per_unit: 100, duration: 5m}
        - {requests_per_unit: 1000, duration: 1h}
        - {requests_per_unit: 5000, unit: day}
  - key: s
    rate_limit: {requests_per_unit: 3, duration: 1500ms, algorithm: sliding_window, resolution: 500ms}
`)
	if err != nil {
		t.Fatal(err)
	}
	k := c.Rules[0]
	want := []Limit{
		{RequestsPerUnit: 10, Window: 30 * time.Second},
		{RequestsPerUnit: 100, Window: 5 * time.Minute},
		{RequestsPerUnit: 1000, Window: time.Hour, Unit: pb.RateLimitResponse_RateLimit_HOUR},
		{RequestsPerUnit: 5000, Unit: pb.RateLimitResponse_RateLimit_DAY},
	}
	if k.Algorithm != "fixed_window" || k.Reference() || fmt.Sprint(k.Limits) != fmt.Sprint(want) {
		t.Fatalf("rule %s: algorithm %q, limits %+v; want fixed_window, %+v", k.Key, k.Algorithm, k.Limits, want)
	}
	for i, d := range []time.Duration{30 * time.Second, 5 * time.Minute, time.Hour, 24 * time.Hour} {
		if got := k.Limits[i].Duration(); got != d {
			t.Errorf("limit %d lasts %v, want %v", i, got, d)
		}
	}
	if s := c.Rules[1]; s.Limits[0].Duration() != 1500*time.Millisecond || s.Algorithm != "sliding_window" {
		t.Fatalf("rule s: %+v", s)
	}
	for _, c := range []struct{ fields, want string }{
		{"requests_per_unit: 1, unit: minute, duration: 30s", "x.yaml:4: give unit or duration, not both (unit minute, duration 30s)"},
		{"requests_per_unit: 1, duration: soon", "x.yaml:4: duration 'soon' is not a positive duration such as 30s or 5m"},
		{"requests_per_unit: 1, duration: 0s", "duration '0s' is not a positive duration"},
		{"requests_per_unit: 1, duration: -5s", "duration '-5s' is not a positive duration"},
		{"requests_per_unit: 1, duration: 1500us", "duration 1.5ms is not a whole number of milliseconds"},
		{"requests_per_unit: 1, duration: 30s, algorithm: sliding_window, resolution: 7s", "duration 30s is not a whole number of resolution 7s"},
		{"requests_per_unit: 1, duration: 1h, algorithm: sliding_window, resolution: 100ms", "resolution 100ms cuts a 1h0m0s window into more than 10000 buckets"},
		{"unlimited: true, duration: 30s", "an unlimited rate_limit takes no algorithm, resolution, limits, duration or burst"},
		{"requests_per_unit: 1, duration: 30s, limits: [{requests_per_unit: 2, duration: 1m, unit: hour}]", "give unit or duration, not both (unit hour, duration 1m)"},
		{"requests_per_unit: 0, duration: 30s", "requests_per_unit 0 is allowed in a reference rule only"},
	} {
		_, err := parseOne("domain: a\ndescriptors:\n  - key: k\n    rate_limit: {" + c.fields + "}\n")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("{%s}: error %v, want %q", c.fields, err, c.want)
		}
	}
}

// TestBurst (issue 33 row 8): a token_bucket limit's capacity (burst) is
// apart from its rate (requests_per_unit per unit or duration), in
// rate_limit and in limits; a burst below 1, above the script's bound, of
// another algorithm or not a whole number is refused with its line.
func TestBurst(t *testing.T) {
	c, err := parseOne(`domain: a
descriptors:
  - key: k
    rate_limit:
      algorithm: token_bucket
      requests_per_unit: 10
      unit: second
      burst: 50
      limits:
        - {requests_per_unit: 100, duration: 30s, burst: 1}
        - {requests_per_unit: 7, unit: minute}
`)
	if err != nil {
		t.Fatal(err)
	}
	ls := c.Rules[0].Limits
	if ls[0].Capacity() != 50 || ls[0].RequestsPerUnit != 10 || ls[1].Capacity() != 1 || ls[1].Duration() != 30*time.Second || ls[2].Capacity() != 7 {
		t.Fatalf("limits %+v: want capacities 50, 1, 7 at rates 10/s, 100/30s, 7/min", ls)
	}
	for _, c := range []struct{ fields, want string }{
		{"algorithm: token_bucket, unit: second, requests_per_unit: 10, burst: 0", "x.yaml:4: burst 0 is below 1: a bucket must hold at least one token"},
		{"algorithm: token_bucket, unit: second, requests_per_unit: 10, burst: -3", "burst -3 is below 1"},
		{"algorithm: token_bucket, unit: second, requests_per_unit: 10, burst: 1000000001", "burst 1000000001 is above 1000000000, the most algorithm token_bucket takes"},
		{"algorithm: token_bucket, unit: second, requests_per_unit: 10, burst: 2.5", "x.yaml:4: burst 2.5 is not a whole number"},
		{"algorithm: sliding_window, unit: second, requests_per_unit: 10, burst: 20", "burst applies to algorithm token_bucket only, not sliding_window"},
		{"unit: second, requests_per_unit: 10, burst: 20", "burst applies to algorithm token_bucket only, not fixed_window"},
		{"algorithm: token_bucket, unit: day, requests_per_unit: 10, burst: 20000000", "a token_bucket of 20000000 tokens refilled over 24h0m0s is beyond the script's bound"},
		{"algorithm: token_bucket, unit: second, requests_per_unit: 1, limits: [{unit: minute, requests_per_unit: 5, burst: 0}]", "burst 0 is below 1"},
	} {
		_, err := parseOne("domain: a\ndescriptors:\n  - key: k\n    rate_limit: {" + c.fields + "}\n")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("{%s}: error %v, want %q", c.fields, err, c.want)
		}
	}
}
