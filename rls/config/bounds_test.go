package config

import (
	"errors"
	"fmt"
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
			if n := allocated(func() { _, err = Load(dir, false, ParseOptions{}) }); n > 64<<20 {
				t.Errorf("Load allocated %d MB, want a few", n>>20)
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrInvalid saying %q", err, c.want)
			}
		})
	}
}

// TestConfigSizeBounds: a file above MaxFileBytes, more than
// MaxDescriptors descriptors over two files, and descriptors nested
// deeper than MaxDescriptorDepth are refused, each naming the file.
func TestConfigSizeBounds(t *testing.T) {
	t.Run("file size", func(t *testing.T) {
		dir := t.TempDir()
		big := "domain: a\n#" + strings.Repeat("x", MaxFileBytes) + "\n"
		write(t, dir, "big.yaml", big)
		_, err := Load(dir, false, ParseOptions{})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "big.yaml: the file holds more than 4194304 bytes") {
			t.Fatalf("error %v, want big.yaml refused for its size", err)
		}
	})
	t.Run("descriptors", func(t *testing.T) {
		dir := t.TempDir()
		half := MaxDescriptors/2 + 1
		for i, name := range []string{"a.yaml", "b.yaml"} {
			var b strings.Builder
			fmt.Fprintf(&b, "domain: d%d\ndescriptors:\n", i)
			for j := range half {
				fmt.Fprintf(&b, "  - {key: k%d}\n", j)
			}
			write(t, dir, name, b.String())
		}
		_, err := Load(dir, false, ParseOptions{})
		want := fmt.Sprintf("b.yaml:%d: the configuration holds more than %d descriptors", 3+MaxDescriptors-half, MaxDescriptors)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
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
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "descriptors nest more than 64 levels deep") {
			t.Fatalf("error %v, want the depth refused", err)
		}
	})
}
