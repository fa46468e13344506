package ratelua

import (
	"fmt"
	"strconv"
	"time"
)

// check accumulates the validation of one limit's fields.
type check struct {
	index int
	err   *LimitError
}

func (c *check) fail(field, format string, args ...any) {
	if c.err == nil {
		c.err = &LimitError{Index: c.index, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
}

// count checks an integer field against [lo, hi].
func (c *check) count(field string, v, lo, hi int64) string {
	if v < lo || v > hi {
		c.fail(field, "must be in [%d, %d], got %d", lo, hi, v)
	}
	return strconv.FormatInt(v, 10)
}

// duration checks a positive duration and converts it to the unit.
func (c *check) duration(field string, d time.Duration, u unit) string {
	n := u.Count(d)
	if d <= 0 || n > maxScriptInt {
		c.fail(field, "must be positive and at most 2^52 %s, got %v", u.Name, d)
	}
	return strconv.FormatInt(n, 10)
}

func (c *check) done() error {
	if c.err != nil {
		return c.err
	}
	return nil
}

// limitArgs renders every limit with render, stopping at the first invalid
// one.
func limitArgs[L any](limits []L, render func(c *check, l L) []string) ([]string, error) {
	var out []string
	for i, l := range limits {
		c := &check{index: i}
		args := render(c, l)
		if err := c.done(); err != nil {
			return nil, err
		}
		out = append(out, args...)
	}
	return out, nil
}
