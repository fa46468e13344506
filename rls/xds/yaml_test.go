package xds_test

import (
	"strings"
	"testing"

	confv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"

	"github.com/ratelua/ratelua/rls/xds"
)

// TestYAMLHoldsEveryField: every field the reference reads from a
// RateLimitConfig is in the document, as a configuration file spells it;
// false and empty fields are left out (the loader's defaults), except
// the domain, the unit and requests_per_unit, which the loader checks.
func TestYAMLHoldsEveryField(t *testing.T) {
	c := &confv3.RateLimitConfig{Name: "ignored", Domain: "edge", Descriptors: []*confv3.RateLimitDescriptor{
		{Key: "remote_address", DetailedMetric: true, RateLimit: &confv3.RateLimitPolicy{Unit: confv3.RateLimitUnit_MINUTE, RequestsPerUnit: 60, Name: "per-ip"}},
		{Key: "path", Value: "/login", ShadowMode: true, Descriptors: []*confv3.RateLimitDescriptor{
			{Key: "user", RateLimit: &confv3.RateLimitPolicy{Unit: confv3.RateLimitUnit_HOUR, RequestsPerUnit: 0, Replaces: []*confv3.RateLimitReplace{{Name: "per-ip"}}}},
			{Key: "admin", RateLimit: &confv3.RateLimitPolicy{Unlimited: true}},
		}},
	}}
	want := `domain: edge
descriptors:
    - key: remote_address
      rate_limit:
        unit: MINUTE
        requests_per_unit: 60
        name: per-ip
      detailed_metric: true
    - key: path
      value: /login
      descriptors:
        - key: user
          rate_limit:
            unit: HOUR
            requests_per_unit: 0
            replaces:
                - name: per-ip
        - key: admin
          rate_limit:
            unit: UNKNOWN
            requests_per_unit: 0
            unlimited: true
      shadow_mode: true
`
	b, err := xds.YAML(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("YAML:\n%s\nwant:\n%s", b, want)
	}
}

// TestYAMLUnits: every unit is named as the files name it, by its value
// on the wire (WEEK, MONTH and YEAR too, which the proto module's v0.1.0
// does not name); a value no proto names is written as its number, which
// the loader refuses, naming it.
func TestYAMLUnits(t *testing.T) {
	for v, want := range map[int32]string{0: "UNKNOWN", 1: "SECOND", 2: "MINUTE", 3: "HOUR", 4: "DAY", 5: "MONTH", 6: "YEAR", 7: "WEEK", 9: `"9"`} {
		c := &confv3.RateLimitConfig{Domain: "d", Descriptors: []*confv3.RateLimitDescriptor{
			{Key: "k", RateLimit: &confv3.RateLimitPolicy{Unit: confv3.RateLimitUnit(v), RequestsPerUnit: 1}},
		}}
		b, err := xds.YAML(c)
		if err != nil {
			t.Fatal(err)
		}
		line := "        unit: " + want + "\n"
		if !strings.Contains(string(b), line) {
			t.Errorf("unit %d: %s, want the line %q", v, b, line)
		}
	}
}

// TestYAMLQuotesWhatYAMLWouldMisread: a domain, key or value that YAML
// would read as another type or as syntax stays the same string.
func TestYAMLQuotesWhatYAMLWouldMisread(t *testing.T) {
	c := &confv3.RateLimitConfig{Domain: "true", Descriptors: []*confv3.RateLimitDescriptor{
		{Key: "a: b", Value: "- 1 # x", RateLimit: &confv3.RateLimitPolicy{Unit: 1, RequestsPerUnit: 1, Name: "*"}},
	}}
	b, err := xds.YAML(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`domain: "true"`, `key: 'a: b'`, `value: '- 1 # x'`, `name: '*'`} {
		if !strings.Contains(string(b), line) {
			t.Errorf("%s: want %s", b, line)
		}
	}
}
