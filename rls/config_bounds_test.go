package rls

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// laughs is a billion-laughs configuration: level i is a descriptor with
// ten children, each holding level i-1 by alias, so that the 2.5 KB file
// stands for 10^levels descriptors.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("domain: b\ndescriptors:\n  - &a0 {key: z, rate_limit: {unit: second, requests_per_unit: 1}}\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  - &a%d {key: l%d, descriptors: [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{key: k%d, descriptors: [*a%d]}", j, i-1)
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestAliasBombsAreRefused (issue 30, H2): files whose aliases expand
// without end or by millions of nodes are refused by check with the file
// and line, within a few megabytes (before the bound, the 3-line file ran
// check out of memory in 2 s and the 7-level one expanded to 10^7 rules).
func TestAliasBombsAreRefused(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"a descriptor holding itself", "domain: a\ndescriptors:\n  - &x {key: k, descriptors: [*x]}\n",
			"x.yaml:3: alias *x is inside the node it names"},
		{"descriptors holding their list", "domain: a\ndescriptors: &d\n  - {key: k, descriptors: *d}\n",
			"x.yaml:3: alias *d is inside the node it names"},
		{"ten to the seventh descriptors", laughs(7),
			"x.yaml:7: excessive aliasing: the aliases of the file expand it by more than 100000 nodes (expanding *a3)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "x.yaml", c.yaml)
			var err error
			if n := allocated(func() { _, err = Check(dir, false, false) }); n > 64<<20 {
				t.Errorf("check allocated %d MB, want a few", n>>20)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrConfig saying %q", err, c.want)
			}
		})
	}
}

// TestAliasesThatShareLoad: aliases used as YAML means them (a shared
// rate_limit, a shared list of descriptors under two parents) load, and
// the shared rules match under each parent.
func TestAliasesThatShareLoad(t *testing.T) {
	y := `domain: a
descriptors:
  - key: web
    descriptors: &common
      - key: user
        rate_limit: &std {unit: minute, requests_per_unit: 5}
      - key: ip
        rate_limit: *std
  - key: api
    descriptors: *common
`
	c, err := Parse([]File{{Name: "x.yaml", Data: []byte(y)}}, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rules) != 4 {
		t.Fatalf("%d rules, want 4 (two under each parent)", len(c.Rules))
	}
	for _, parent := range []string{"web", "api"} {
		m := c.lookup("a", desc(parent, "", "ip", "1").Entries)
		if m.rule == nil || m.rule.Limits[0].RequestsPerUnit != 5 || m.rule.Key != "a."+parent+".ip" {
			t.Errorf("%s.ip matched %+v, want the shared 5 a minute", parent, m.rule)
		}
	}
}

// TestConfigSizeBounds: a file above MaxConfigFileBytes, more than
// MaxConfigDescriptors descriptors over two files, and descriptors nested
// deeper than MaxDescriptorDepth are refused, each naming the file.
func TestConfigSizeBounds(t *testing.T) {
	t.Run("file size", func(t *testing.T) {
		dir := t.TempDir()
		big := "domain: a\n#" + strings.Repeat("x", MaxConfigFileBytes) + "\n"
		write(t, dir, "big.yaml", big)
		_, err := Check(dir, false, false)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "big.yaml: the file holds more than 4194304 bytes") {
			t.Fatalf("error %v, want big.yaml refused for its size", err)
		}
	})
	t.Run("descriptors", func(t *testing.T) {
		dir := t.TempDir()
		half := MaxConfigDescriptors/2 + 1
		for i, name := range []string{"a.yaml", "b.yaml"} {
			var b strings.Builder
			fmt.Fprintf(&b, "domain: d%d\ndescriptors:\n", i)
			for j := range half {
				fmt.Fprintf(&b, "  - {key: k%d}\n", j)
			}
			write(t, dir, name, b.String())
		}
		_, err := Check(dir, false, false)
		want := fmt.Sprintf("b.yaml:%d: the configuration holds more than %d descriptors", 3+MaxConfigDescriptors-half, MaxConfigDescriptors)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
	})
	t.Run("depth", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("domain: a\ndescriptors:\n")
		for i := range MaxDescriptorDepth + 1 {
			fmt.Fprintf(&b, "%s- key: k%d\n%s  descriptors:\n", strings.Repeat("    ", i), i, strings.Repeat("    ", i))
		}
		_, err := Parse([]File{{Name: "x.yaml", Data: []byte(b.String())}}, ParseOptions{})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "descriptors nest more than 64 levels deep") {
			t.Fatalf("error %v, want the depth refused", err)
		}
	})
}

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
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
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

// TestCheckSettingsRefusesAShareRoundingToZero (issue 30, M1): with
// RATELUA_FALLBACK 0.05 a reference rule of 10 an hour would fall back to
// 0 (every request denied in an outage); check, the service and a reload
// refuse it with its file and line, as the limiters refuse it for an
// extension rule; 0.1 (1 of 10) loads.
func TestCheckSettingsRefusesAShareRoundingToZero(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: zero\n    rate_limit: {unit: hour, requests_per_unit: 0}\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 10}\n  - key: e\n    rate_limit: {unit: hour, requests_per_unit: 10, algorithm: token_bucket}\n")
	_, err := CheckSettings(dir, Settings{Fallback: 0.05})
	want := "a.yaml:6: the fallback share 0.05 (RATELUA_FALLBACK) of requests_per_unit 10 rounds down to 0"
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	if _, err := CheckSettings(dir, Settings{Fallback: 0.1}); err != nil {
		t.Fatalf("a share of 0.1 (1 of 10): %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	// 0.7 of 90 is 63, exactly (the float product is 62.99999999999999).
	if got := shareOf(90, 0.7); got != 63 {
		t.Fatalf("0.7 of 90: %d, want 63", got)
	}
}
