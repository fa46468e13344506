package wire

import "time"

// Result is a decision as the Go API returns it: the same fields, in the
// same order, as ratelua.Result, which converts to and from it.
type Result struct {
	Allowed      bool
	Remaining    int64
	RetryAfter   time.Duration
	ResetAfter   time.Duration
	Limit        int
	DryRunDenied bool
}

// Decode reads a script's reply of five integers, {allowed, remaining,
// retry_after, reset_after, limit_index}, in the unit u; Limit is the
// 0-based limit_index - 1.
func Decode(ints []int64, u Unit) Result {
	return Result{
		Allowed:    ints[0] == 1,
		Remaining:  ints[1],
		RetryAfter: u.Duration(ints[2]),
		ResetAfter: u.Duration(ints[3]),
		Limit:      int(ints[4]) - 1,
	}
}
