package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/ratelua/ratelua/testbench"
)

// A server under callgrind counts the instructions executed inside call(),
// the server's command dispatch (for EVALSHA and FCALL it holds the whole
// script, and each redis.call's own call() nested in it). Debian's
// redis-server 7.0 and valkey-server 8.0 are stripped, but call(),
// lastsaveCommand and echoCommand are in their dynamic symbol table (the
// servers are linked with -rdynamic for their crash reports), which is all
// callgrind needs:
//
//	--collect-atstart=no --toggle-collect=call    count inside call() only
//	--zero-before=lastsaveCommand                 LASTSAVE zeroes the counts
//	--dump-before=echoCommand                     ECHO writes them to a file
//
// so a measurement is LASTSAVE, the calls, ECHO, and the dump's total less
// that of LASTSAVE then ECHO alone (the two markers' share of call()). The
// servers run with activerehashing no (the timer would move the key tables
// at times of its own), the slow log off (call() adds a slow command to it,
// and every command is slow under callgrind) and active expiry off (DEBUG
// SET-ACTIVE-EXPIRE 0), so that the same commands execute the same
// instructions on a quiet or a busy machine.

// callgrindArgs are valgrind's arguments before the server's command line.
var callgrindArgs = []string{
	"--tool=callgrind",
	"--collect-atstart=no",
	"--toggle-collect=call",
	"--zero-before=lastsaveCommand",
	"--dump-before=echoCommand",
	"--dump-instr=no",
	"--dump-line=no",
	"--compress-strings=no",
}

// callgrindConfig are the server settings that keep the counts
// deterministic (see above).
var callgrindConfig = []string{
	"activerehashing no",
	"slowlog-log-slower-than -1",
	"latency-monitor-threshold 0",
	"enable-debug-command local",
}

// callgrindOut is the name callgrind writes its dumps under, in the node's
// directory: callgrindOut.1, callgrindOut.2, ...
const callgrindOut = "callgrind.out"

// valgrindPath finds valgrind on PATH; the error says how to install it.
func valgrindPath() (string, error) {
	p, err := exec.LookPath("valgrind")
	if err != nil {
		return "", fmt.Errorf("valgrind not found on PATH (bash .ci/install-valgrind, or apt-get install valgrind): %w: %w", err, testbench.ErrUnavailable)
	}
	return p, nil
}

// serverBinary finds the server of kind: the binary RATELUA_REDIS_SERVER or
// RATELUA_VALKEY_SERVER names, else redis-server or valkey-server on PATH,
// as testbench does.
func serverBinary(kind testbench.Kind) (string, error) {
	name, env := "redis-server", "RATELUA_REDIS_SERVER"
	if kind == testbench.Valkey {
		name, env = "valkey-server", "RATELUA_VALKEY_SERVER"
	}
	if v := os.Getenv(env); v != "" {
		name = v
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found: %w: %w", name, err, testbench.ErrUnavailable)
	}
	return p, nil
}

// callgrindProvider is a testbench.Provider that runs each server under
// callgrind.
type callgrindProvider struct{}

func (callgrindProvider) Name() string { return "callgrind" }

func (callgrindProvider) Check(_ context.Context, kind testbench.Kind) error {
	if _, err := valgrindPath(); err != nil {
		return err
	}
	_, err := serverBinary(kind)
	return err
}

func (callgrindProvider) Launch(ctx context.Context, spec testbench.Spec) (testbench.Instance, error) {
	vg, err := valgrindPath()
	if err != nil {
		return nil, err
	}
	server, err := serverBinary(spec.Kind)
	if err != nil {
		return nil, err
	}
	var conf strings.Builder
	for _, l := range spec.Config {
		conf.WriteString(l + "\n")
	}
	if err := os.WriteFile(spec.ConfigFile, []byte(conf.String()), 0o644); err != nil {
		return nil, fmt.Errorf("callgrind: %w", err)
	}
	args := append(append([]string(nil), callgrindArgs...), "--callgrind-out-file="+filepath.Join(spec.Dir, callgrindOut), server, spec.ConfigFile)
	p := &cgProcess{spec: spec, path: vg, args: args}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// cgProcess is valgrind running one server.
type cgProcess struct {
	spec testbench.Spec
	path string
	args []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *cgProcess) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.spec.Port))
}

func (p *cgProcess) Describe() string { return "valgrind --tool=callgrind " + string(p.spec.Kind) }

func (p *cgProcess) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *cgProcess) Start(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	log, err := os.OpenFile(p.spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("callgrind: %w", err)
	}
	defer log.Close()
	cmd := exec.Command(p.path, p.args...)
	cmd.Dir = p.spec.Dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("callgrind: start %s: %w", p.path, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

func (p *cgProcess) signal(sig os.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("callgrind: signal: %w", err)
	}
	if sig == syscall.SIGKILL {
		<-done
	}
	return nil
}

func (p *cgProcess) Kill() error   { return p.signal(syscall.SIGKILL) }
func (p *cgProcess) Pause() error  { return p.signal(syscall.SIGSTOP) }
func (p *cgProcess) Resume() error { return p.signal(syscall.SIGCONT) }
func (p *cgProcess) Remove() error { return p.Kill() }

// cgServer is a server under callgrind and the dumps read so far.
type cgServer struct {
	node  *testbench.Node
	dumps int // dumps read: the next one is callgrindOut.<dumps+1>
	// markers is the count of LASTSAVE then ECHO alone.
	markers int64
}

// startCallgrind starts a server of kind under callgrind and measures the
// markers' own count.
func startCallgrind(ctx context.Context, kind testbench.Kind) (*cgServer, error) {
	node, err := testbench.StartNode(ctx, testbench.Options{Kind: kind, Provider: callgrindProvider{}, Config: callgrindConfig})
	if err != nil {
		return nil, fmt.Errorf("start %s under callgrind: %w", kind, err)
	}
	s := &cgServer{node: node}
	if _, err := node.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "0"); err != nil {
		node.Close()
		return nil, fmt.Errorf("%s: DEBUG SET-ACTIVE-EXPIRE 0: %w", kind, err)
	}
	// The markers' count: the smallest of three, as the first LASTSAVE
	// and ECHO of a connection may take another path (a buffer grown).
	for i := range 3 {
		n, err := s.count(ctx, func() error { return nil })
		if err != nil {
			node.Close()
			return nil, err
		}
		if i == 0 || n < s.markers {
			s.markers = n
		}
	}
	return s, nil
}

// Close stops the server and removes its directory with the dumps.
func (s *cgServer) Close() error { return s.node.Close() }

// count runs LASTSAVE, work, ECHO on the node's own connection and returns
// the instructions inside call() between the two markers (the markers'
// share included), read from the dump ECHO wrote.
func (s *cgServer) count(ctx context.Context, work func() error) (int64, error) {
	if _, err := s.node.Do(ctx, "LASTSAVE"); err != nil {
		return 0, fmt.Errorf("lastsave: %w", err)
	}
	if err := work(); err != nil {
		return 0, err
	}
	if _, err := s.node.Do(ctx, "ECHO", "ratelua-instructions"); err != nil {
		return 0, fmt.Errorf("echo: %w", err)
	}
	s.dumps++
	path := filepath.Join(s.node.Dir, callgrindOut+"."+strconv.Itoa(s.dumps))
	n, err := readDumpTotal(path)
	if err != nil {
		return 0, err
	}
	os.Remove(path)
	return n, nil
}

// measure is count less the markers' share.
func (s *cgServer) measure(ctx context.Context, work func() error) (int64, error) {
	n, err := s.count(ctx, work)
	return n - s.markers, err
}

// readDumpTotal reads the "summary:" (or "totals:") line of a callgrind
// dump: the instructions (Ir) it holds.
func readDumpTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("callgrind dump: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{"summary:", "totals:"} {
			if v, ok := strings.CutPrefix(line, p); ok {
				n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("callgrind dump %s: %q: %w", path, line, err)
				}
				return n, nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("callgrind dump %s: %w", path, err)
	}
	return 0, fmt.Errorf("callgrind dump %s: no summary line", path)
}
