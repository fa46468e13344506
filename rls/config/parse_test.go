package config

import (
	"errors"
	"strings"
	"testing"
)

// TestFractionalRequestsPerUnitRefused (issue 30, L6): 0.5 loaded as 0
// (every request denied) and 5.9 as 5; both are refused with their line,
// in a reference rule and in an extension's limits; whole numbers written
// as floats keep their value.
func TestFractionalRequestsPerUnitRefused(t *testing.T) {
	y := `domain: a
descriptors:
  - key: half
    rate_limit: {unit: second, requests_per_unit: 0.5}
  - key: most
    rate_limit:
      unit: second
      requests_per_unit: 5.9
  - key: ext
    rate_limit:
      unit: second
      requests_per_unit: 5
      limits:
        - {unit: hour, requests_per_unit: 1.5}
`
	_, err := Parse([]File{{Name: "x.yaml", Data: []byte(y)}}, ParseOptions{})
	for _, want := range []string{
		"x.yaml:4: requests_per_unit 0.5 is not a whole number",
		"x.yaml:8: requests_per_unit 5.9 is not a whole number",
		"x.yaml:14: requests_per_unit 1.5 is not a whole number",
	} {
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("errors %v, want %q", err, want)
		}
	}
	c, err := Parse([]File{{Name: "x.yaml", Data: []byte("domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1e3}\n  - key: j\n    rate_limit: {unit: second, requests_per_unit: 10.0}\n")}}, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := c.Rules[0].Limits[0].RequestsPerUnit, c.Rules[1].Limits[0].RequestsPerUnit; a != 1000 || b != 10 {
		t.Fatalf("1e3 and 10.0 loaded as %d and %d", a, b)
	}
}

// TestExtensionsAreRefusedWhereTheyDoNotBelong: extension fields outside
// rate_limit, and resolution without sliding_window, are errors.
func TestExtensionsAreRefusedWhereTheyDoNotBelong(t *testing.T) {
	for _, y := range []string{
		"domain: a\ndescriptors:\n  - key: k\n    algorithm: ar1\n    rate_limit: {unit: minute, requests_per_unit: 1}\n",
		"domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1, resolution: 1s}\n",
		"domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 0, algorithm: token_bucket}\n",
		"domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 4294967296}\n",
	} {
		if _, err := Parse([]File{{Name: "x.yaml", Data: []byte(y)}}, ParseOptions{}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "x.yaml:") {
			t.Errorf("%q: error %v, want an Error with its line", y, err)
		}
	}
}
