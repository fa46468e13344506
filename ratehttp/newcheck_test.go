package ratehttp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/ratehttp"
)

// TestNewRefusesAZeroLimiter (row 11): a Limiter that no constructor made
// (its zero value) cannot decide anything; New says which limit holds it
// instead of a panic on the first request.
func TestNewRefusesAZeroLimiter(t *testing.T) {
	for _, names := range [][]string{nil, {}} {
		m, err := ratehttp.New(ratehttp.Options{}, ratehttp.Limit{Limiter: &ratelua.Limiter{}, Name: "login", Names: names})
		if m != nil || !errors.Is(err, ratehttp.ErrInvalidConfig) || !strings.Contains(err.Error(), "limit 0") || !strings.Contains(err.Error(), "constructor") {
			t.Errorf("New with a zero Limiter (Names %v): %v, %v; want an ErrInvalidConfig naming limit 0", names, m, err)
		}
	}
}
