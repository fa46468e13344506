package config

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one error of a configuration, where it is written.
type Error struct {
	File string
	Line int // 0 when the error is about the whole file
	Msg  string
}

// Error is "file:line: message".
func (e *Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// ErrInvalid is wrapped by every error of Parse and Load.
var ErrInvalid = errors.New("rls: invalid configuration")

// Errors is every error Parse found, in file order.
type Errors []*Error

// Error lists every error, one a line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Is reports whether target is ErrInvalid.
func (es Errors) Is(target error) bool { return target == ErrInvalid }
