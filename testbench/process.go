package testbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
)

// binary returns the executable name and the environment variable that
// overrides it for kind.
func binary(kind Kind) (name, env string) {
	switch kind {
	case Redis:
		return "redis-server", "RATELUA_REDIS_SERVER"
	case Valkey:
		return "valkey-server", "RATELUA_VALKEY_SERVER"
	}
	return "", ""
}

// lookupBinary finds the server binary of kind; its error is one line and
// wraps ErrUnavailable and exec.ErrNotFound.
func lookupBinary(kind Kind) (string, error) {
	name, env := binary(kind)
	if name == "" {
		return "", unavailablef(nil, "testbench: unknown kind %q (want %q or %q)", kind, Redis, Valkey)
	}
	if v := os.Getenv(env); v != "" {
		p, err := exec.LookPath(v)
		if err != nil {
			return "", unavailablef(exec.ErrNotFound, "testbench: %s=%s is not an executable", env, v)
		}
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", unavailablef(exec.ErrNotFound, "testbench: %s not found on PATH (install it or set %s)", name, env)
	}
	return p, nil
}

// Processes returns the provider that runs redis-server or valkey-server
// on this machine: the binaries on PATH, or the ones named by
// RATELUA_REDIS_SERVER and RATELUA_VALKEY_SERVER. Each server runs in its
// node's directory with a parent-death signal (on Linux), so that no server
// outlives the test process.
func Processes() Provider { return processes{} }

type processes struct{}

func (processes) Name() string { return "processes" }

func (processes) Check(_ context.Context, kind Kind) error {
	_, err := lookupBinary(kind)
	return err
}

func (processes) Launch(ctx context.Context, spec Spec) (Instance, error) {
	path, err := lookupBinary(spec.Kind)
	if err != nil {
		return nil, err
	}
	if err := writeConfig(spec); err != nil {
		return nil, fmt.Errorf("testbench: %w", err)
	}
	p := &process{path: path, spec: spec}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// process is a server process; Start replaces cmd and done on each run.
type process struct {
	path string
	spec Spec

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *process) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.spec.Port))
}

func (p *process) Describe() string { return p.path }

func (p *process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *process) Start(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("testbench: %s on port %d is still running", p.path, p.spec.Port)
		}
	}
	// The server writes its log to spec.LogFile once it has read its
	// configuration; what it says before (configuration errors) goes to
	// stdout and stderr, appended to the same file.
	logFile, err := os.OpenFile(p.spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testbench: %w", err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(p.path, p.spec.ConfigFile)
	cmd.Dir = p.spec.Dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testbench: start %s on port %d: %w", p.path, p.spec.Port, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// current returns the running process, or nil when it has exited.
func (p *process) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return nil, p.done
	default:
		return p.cmd, p.done
	}
}

func (p *process) Kill() error {
	cmd, done := p.current()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("testbench: kill %s on port %d: %w", p.path, p.spec.Port, err)
	}
	<-done
	return nil
}

func (p *process) Pause() error  { return p.signal(sigStop) }
func (p *process) Resume() error { return p.signal(sigCont) }

func (p *process) signal(sig os.Signal) error {
	if sig == nil {
		return fmt.Errorf("testbench: pausing a process is not supported on this system")
	}
	cmd, _ := p.current()
	if cmd == nil {
		return fmt.Errorf("testbench: %s on port %d is not running", p.path, p.spec.Port)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("testbench: signal %v to %s on port %d: %w", sig, p.path, p.spec.Port, err)
	}
	return nil
}

func (p *process) Remove() error { return p.Kill() }

// pid is the running process's id, or 0.
func (p *process) pid() int {
	if cmd, _ := p.current(); cmd != nil {
		return cmd.Process.Pid
	}
	return 0
}
