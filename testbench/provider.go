package testbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrUnavailable marks an error from Provider.Check: the provider cannot run
// servers of a kind here (the binary is missing, no Docker engine answers).
// Start and StartSingle skip the test on it (fail it under CI=true).
var ErrUnavailable = errors.New("testbench: unavailable")

// unavailableError is a one-line reason that wraps ErrUnavailable (and a
// cause, such as exec.ErrNotFound) without repeating their text.
type unavailableError struct {
	msg   string
	cause error
}

func (e *unavailableError) Error() string { return e.msg }

func (e *unavailableError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrUnavailable}
	}
	return []error{ErrUnavailable, e.cause}
}

// unavailablef returns an error wrapping ErrUnavailable and cause.
func unavailablef(cause error, format string, args ...any) error {
	return &unavailableError{msg: fmt.Sprintf(format, args...), cause: cause}
}

// Provider starts servers: Processes runs binaries on this machine, Docker
// runs containers. testbench chooses the ports, creates each node's
// directory and writes its configuration; the provider runs the server on
// it.
type Provider interface {
	// Name names the provider in messages, such as "processes" or
	// "docker valkey/valkey:8.0".
	Name() string
	// Check reports whether servers of kind can be started; when they
	// cannot, its one-line error wraps ErrUnavailable.
	Check(ctx context.Context, kind Kind) error
	// Launch starts one server for spec and returns without waiting for it
	// to answer (testbench polls Instance.Addr). It writes spec.ConfigFile:
	// spec.Config's lines in order, then any lines of its own (such as
	// cluster-announce-ip), and runs the server on that file.
	Launch(ctx context.Context, spec Spec) (Instance, error)
}

// Spec is one node for Provider.Launch.
type Spec struct {
	// Kind is the server family.
	Kind Kind
	// Port is the client port; the cluster bus is Port+10000. Both were
	// free on 127.0.0.1 when chosen.
	Port int
	// BusPort is Port+10000.
	BusPort int
	// Dir is the node's own directory on this machine: the configuration,
	// dump.rdb, nodes.conf and the log live here, and a restart reuses it.
	Dir string
	// ConfigFile is the path Launch writes the configuration to, in Dir.
	ConfigFile string
	// LogFile is the server's log file, in Dir (the configuration's
	// logfile).
	LogFile string
	// Config is the configuration, one "name value" line each.
	Config []string
}

// Instance is one server started by a Provider. It may be stopped and
// started again any number of times until Remove.
type Instance interface {
	// Addr is the "host:port" that clients on this machine dial, and the
	// address the node announces to its cluster.
	Addr() string
	// Describe names the server in messages: the binary or the container.
	Describe() string
	// Done is closed when the current run of the server has exited.
	Done() <-chan struct{}
	// Kill ends the server at once (SIGKILL) and waits until it is gone.
	Kill() error
	// Pause freezes the server (SIGSTOP or a paused container).
	Pause() error
	// Resume undoes Pause.
	Resume() error
	// Start runs the server again, on the same port, directory and
	// configuration, after it has exited.
	Start(ctx context.Context) error
	// Remove ends the server if it runs and frees what the provider holds
	// for it (a container). testbench removes Dir itself.
	Remove() error
}

// writeConfig writes spec.Config and extra to spec.ConfigFile.
func writeConfig(spec Spec, extra ...string) error {
	var b strings.Builder
	b.WriteString("# written by github.com/ratelua/ratelua/testbench\n")
	for _, l := range append(append([]string(nil), spec.Config...), extra...) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(spec.ConfigFile), 0o755); err != nil {
		return err
	}
	return os.WriteFile(spec.ConfigFile, []byte(b.String()), 0o644)
}
