package ratelua

import (
	"errors"
	"fmt"
)

// Sentinel errors, for errors.Is.
var (
	// ErrInvalidLimit: a limit or option was rejected before any round trip.
	// The error is a *LimitError.
	ErrInvalidLimit = errors.New("ratelua: invalid limit")
	// ErrScript: a script answered an error reply. The error is a
	// *ScriptError.
	ErrScript = errors.New("ratelua: script error")
	// ErrUnavailable: the server could not be reached or could not serve
	// (network error, timeout, LOADING, CLUSTERDOWN...). Limiters built with
	// FailOpen answer Allowed with this error.
	ErrUnavailable = errors.New("ratelua: server unavailable")
	// ErrImmutable: a script version was registered again with other
	// source.
	ErrImmutable = errors.New("ratelua: script version already registered with other source")
	// ErrCrossSlot: keys that must share a cluster slot do not.
	ErrCrossSlot = errors.New("ratelua: keys in different cluster slots")
)

// LimitError says which limit, or which option, was invalid and why.
type LimitError struct {
	Index  int    // 0-based index of the limit, -1 for an option
	Field  string // the field, e.g. "Resolution"
	Reason string
}

func (e *LimitError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("ratelua: invalid option %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("ratelua: invalid limit %d: %s %s", e.Index, e.Field, e.Reason)
}

// Is reports whether target is ErrInvalidLimit.
func (e *LimitError) Is(target error) bool { return target == ErrInvalidLimit }

// ScriptError is an error reply of a script: for ratelua's scripts a
// message that starts with "ratelua:" and names the argument.
type ScriptError struct {
	Script  string // name@vN
	Message string // the server's message (rueidis strips any "ERR ")
}

func (e *ScriptError) Error() string {
	return fmt.Sprintf("ratelua: %s: %s", e.Script, e.Message)
}

// Is reports whether target is ErrScript.
func (e *ScriptError) Is(target error) bool { return target == ErrScript }

// UnavailableError wraps the failure that kept a call from being served.
type UnavailableError struct {
	Err error
}

func (e *UnavailableError) Error() string { return "ratelua: server unavailable: " + e.Err.Error() }

// Unwrap returns the underlying failure.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
