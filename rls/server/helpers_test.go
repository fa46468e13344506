package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

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
