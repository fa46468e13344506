package ratelua

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Sentinel errors, for errors.Is.
var (
	// ErrInvalidLimit: a limit, option or argument was rejected before any
	// round trip. The error is a *LimitError.
	ErrInvalidLimit = errors.New("ratelua: invalid limit")
	// ErrScript: the server answered with an error reply (a *ServerError):
	// a script rejecting its input ("ratelua: ..."), or the server refusing
	// the call or the loading it needed (NOPERM, OOM, BUSY, LOADING,
	// CLUSTERDOWN...). The server answered, so even a FailOpen limiter
	// denies.
	ErrScript = errors.New("ratelua: error reply")
	// ErrUnavailable: the call was sent, or could not be sent, and got no
	// answer from the server (connection refused or reset, a deadline that
	// passed while waiting for the server, a closed client). Only then does
	// a FailOpen limiter answer Allowed, with this error. A context the
	// caller cancelled, or whose deadline had passed before the call, is not
	// ErrUnavailable: the server was not at fault (see Options.FailOpen).
	ErrUnavailable = errors.New("ratelua: server unavailable")
	// ErrImmutable: a script version was registered again with other
	// source.
	ErrImmutable = errors.New("ratelua: script version already registered with other source")
	// ErrUnknownScript: no script has the asked name or version.
	ErrUnknownScript = errors.New("ratelua: unknown script")
	// ErrNotSupported: the Client cannot do what was asked (list its nodes
	// for ResetPrefix or loading, or FCALL on miniredis).
	ErrNotSupported = errors.New("ratelua: not supported by this client")
	// ErrLeaseLost: a concurrency lease is no longer held (it was not
	// renewed in time, a reset dropped it, or a failover forgot it), or
	// was released before a renewal. Its holder must stop.
	ErrLeaseLost = errors.New("ratelua: lease lost")
	// ErrReservationExpired: a Reservation's Settle or Cancel applied
	// nothing: the server (or the fallback) did not hold it any more (its
	// lifetime had passed, a reset dropped it, or a failover forgot it).
	// Its estimate stays spent.
	ErrReservationExpired = errors.New("ratelua: reservation not held")
)

// LimitError says which limit, option or argument was invalid and why.
type LimitError struct {
	Index  int    // 0-based index of the limit, -1 for an option or argument
	Field  string // the field, e.g. "Resolution"
	Reason string
}

func (e *LimitError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("ratelua: invalid %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("ratelua: invalid limit %d: %s %s", e.Index, e.Field, e.Reason)
}

// Is reports whether target is ErrInvalidLimit.
func (e *LimitError) Is(target error) bool { return target == ErrInvalidLimit }

// ServerError is an error reply of the server. Clients return every error
// reply as one; a limiter's errors name the script it called.
type ServerError struct {
	Script string // name@vN, when a limiter made the call
	// Message is the reply's text, e.g. "NOSCRIPT No matching script";
	// in a limiter's errors without a leading "ERR ".
	Message string
}

// Error names the script and gives the server's message, escaped as in a
// Go string literal. Only the caller's input that the message repeats (the
// value a script quotes after "got '") is shortened, to maxExcerpt bytes;
// the server's own text is kept whole up to maxServerText bytes, a bound
// only against a misbehaving server.
func (e *ServerError) Error() string {
	msg := serverText(strings.TrimPrefix(e.Message, "ERR "))
	if e.Script == "" {
		return "ratelua: " + msg
	}
	return "ratelua: " + e.Script + ": " + msg
}

// Is reports whether target is ErrScript.
func (e *ServerError) Is(target error) bool { return target == ErrScript }

// unavailableError wraps the failure that kept a call from an answer.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return "ratelua: server unavailable: " + e.err.Error() }

func (e *unavailableError) Unwrap() error { return e.err }

func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// classify makes err, the failure of a call of script, one of ratelua's
// kinds: ratelua's own errors pass through; an error reply is a
// *ServerError naming the script (ErrScript); a call that could not be
// sent or got no answer wraps ErrUnavailable; anything else (a reply of
// the wrong shape, an unknown failure) keeps no kind, so that a FailOpen
// limiter denies on it.
func classify(script string, err error) error {
	var se *ServerError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalidLimit), errors.Is(err, ErrUnknownScript), errors.Is(err, ErrNotSupported):
		return err
	case errors.As(err, &se):
		// A server's "no" wins over anything else in the chain.
		if se == err {
			return &ServerError{Script: script, Message: strings.TrimPrefix(se.Message, "ERR ")}
		}
		return fmt.Errorf("ratelua: %s: %w", script, err)
	case errors.Is(err, ErrUnavailable):
		return err
	case unanswered(err):
		return &unavailableError{err: err}
	}
	return fmt.Errorf("ratelua: %s: %w", script, err)
}

// unreachable is classify for work that is not a script call.
func unreachable(err error) error {
	if err != nil && !errors.Is(err, ErrUnavailable) && unanswered(err) {
		var se *ServerError
		if !errors.As(err, &se) {
			return &unavailableError{err: err}
		}
	}
	return err
}

// unanswered reports a failure before any answer: a network error, a
// deadline, a connection closed under the call. A cancelled context is not
// one: the caller gave up, the server did not fail (callerGaveUp).
func unanswered(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// callerGaveUp is the error of a call whose context was done before it was
// sent (cause is ctx.Err()): it wraps the context's error and no ratelua
// kind, so that even a FailOpen limiter denies.
func callerGaveUp(script string, cause error) error {
	return fmt.Errorf("ratelua: %s: not sent, the caller's context is done: %w", script, cause)
}

// maxExcerpt is the most bytes of caller input an error quotes.
const maxExcerpt = 64

// maxServerText is the most bytes of a server's own message an error
// repeats: far above any message of the scripts or the servers.
const maxServerText = 1024

// serverText is a server's message for an error: escaped, with the
// caller's input it quotes (after "got '", up to the last "'") shortened
// by excerpt, and the rest cut only past maxServerText bytes.
func serverText(msg string) string {
	start := strings.Index(msg, "got '")
	end := strings.LastIndexByte(msg, '\'')
	if start < 0 || end < start+len("got '") {
		return escapeText(msg, maxServerText)
	}
	start += len("got '")
	return escapeText(msg[:start], maxServerText) + excerpt(msg[start:end]) + escapeText(msg[end:], maxServerText)
}

// excerpt returns s for an error message: control bytes and invalid UTF-8
// escaped as in a Go string literal, cut after maxExcerpt bytes with the
// full length noted.
func excerpt(s string) string { return escapeText(s, maxExcerpt) }

// escapeText is excerpt cut after most bytes.
func escapeText(s string, most int) string {
	cut := s
	if len(s) > most {
		cut = s[:most]
	}
	var b strings.Builder
	for i := 0; i < len(cut); {
		r, size := utf8.DecodeRuneInString(cut[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, cut[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(cut[i : i+size])
		}
		i += size
	}
	if len(cut) < len(s) {
		fmt.Fprintf(&b, "...(%d bytes)", len(s))
	}
	return b.String()
}

// quote is excerpt in double quotes, for naming a value in a message.
func quote(s string) string { return `"` + strings.ReplaceAll(excerpt(s), `"`, `\"`) + `"` }
