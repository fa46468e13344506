package ratelua

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestErrorsQuoteBoundedInput: no error carries more than a bounded,
// escaped excerpt of what a caller passed.
func TestErrorsQuoteBoundedInput(t *testing.T) {
	huge := strings.Repeat("k", 1<<20)
	if _, err := NewTokenBucket(Rueidis(nil), Options{}, PerSecond(1, 1)); !errors.Is(err, ErrInvalidLimit) {
		t.Fatalf("a nil rueidis client: %v", err)
	}
	l, _ := NewTokenBucket(noClient{}, Options{}, PerSecond(1, 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := map[string]error{
		"ResetMany": l.ResetMany(ctx, []string{huge, "\x00\x1b[31m"}),
	}
	_, errs["Prefix"] = NewTokenBucket(noClient{}, Options{Prefix: huge + "{"}, PerSecond(1, 1))
	_, errs["Prefix braces"] = NewTokenBucket(noClient{}, Options{Prefix: "a{\x1b[2J"}, PerSecond(1, 1))
	_, errs["ResetPrefix"] = ResetPrefix(ctx, noClient{}, huge, true, nil)
	errs["ServerError"] = classify("token_bucket@v2", &ServerError{Message: "ERR ratelua: ARGV[5] got '\x00\x1b[2J" + huge + "'"})
	for name, err := range errs {
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		msg := err.Error()
		if len(msg) > 512 || strings.ContainsAny(msg, "\x00\x1b") {
			t.Errorf("%s: error of %d bytes: %.200q", name, len(msg), msg)
		}
	}
	if !strings.Contains(errs["ServerError"].Error(), `\x00\x1b[2J`) {
		t.Errorf("control bytes are not escaped: %q", errs["ServerError"].Error())
	}
}
