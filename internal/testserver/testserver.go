// Package testserver starts real Redis and Valkey server processes for tests,
// each on its own free loopback port with its own temporary directory and no
// persistence.
//
// The binaries are redis-server and valkey-server found on PATH, or the paths
// named by the environment variables RATELUA_REDIS_SERVER and
// RATELUA_VALKEY_SERVER. When a binary is missing, Start skips the test,
// except under CI (CI=true), where a missing server is a failure.
package testserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Kind is a server family.
type Kind string

const (
	// Redis is redis-server (the CI machine has Redis 7.0).
	Redis Kind = "redis"
	// Valkey is valkey-server (the CI machine has Valkey 8).
	Valkey Kind = "valkey"
)

const (
	readyTimeout = 10 * time.Second // until the server answers PING
	stopTimeout  = 5 * time.Second  // between SIGTERM and SIGKILL
	portAttempts = 5                // tries when the chosen port is taken
	logTailLines = 10               // log lines quoted in errors
)

// Server is a running server process.
type Server struct {
	// Kind is the server family.
	Kind Kind
	// Addr is the server's "127.0.0.1:port" address.
	Addr string
	// Version is the server's version from INFO server: redis_version for
	// Redis, valkey_version for Valkey (whose redis_version is a fixed
	// compatibility value).
	Version string

	path string // the binary
	dir  string // temporary working directory, removed on stop
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
	once sync.Once
}

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

// Available reports whether a server binary of kind can be run, and its
// path: the one named by RATELUA_REDIS_SERVER or RATELUA_VALKEY_SERVER when
// that is set, otherwise redis-server or valkey-server on PATH.
func Available(kind Kind) (path string, ok bool) {
	path, err := lookup(kind)
	return path, err == nil
}

// lookup is Available with a one-line reason when the binary is missing;
// that error wraps exec.ErrNotFound.
func lookup(kind Kind) (string, error) {
	name, env := binary(kind)
	if name == "" {
		return "", fmt.Errorf("testserver: unknown server kind %q: %w", kind, exec.ErrNotFound)
	}
	if v := os.Getenv(env); v != "" {
		p, err := exec.LookPath(v)
		if err != nil {
			return "", fmt.Errorf("testserver: %s=%s: %w", env, v, exec.ErrNotFound)
		}
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("testserver: %s not found on PATH (install it or set %s): %w", name, env, exec.ErrNotFound)
	}
	return p, nil
}

// Start starts a server of kind for tb and stops it in tb.Cleanup. When the
// binary is missing it calls tb.Skip with a one-line reason — except when
// the environment variable CI is "true", where it calls tb.Fatal. A server
// that is present but does not start is always a tb.Fatal.
func Start(tb testing.TB, kind Kind) *Server {
	tb.Helper()
	path, err := lookup(kind)
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal(err)
		} else {
			tb.Skip(err)
		}
		return nil
	}
	s, err := start(kind, path)
	if err != nil {
		tb.Fatal(err)
		return nil
	}
	tb.Cleanup(s.stop)
	return s
}

// StartMain is for TestMain: starts a server shared by a whole package; the
// returned stop function must be called (it may be called more than once).
// It returns an error instead of skipping; when the binary is missing that
// error wraps exec.ErrNotFound (or check Available first).
func StartMain(kind Kind) (*Server, func(), error) {
	path, err := lookup(kind)
	if err != nil {
		return nil, nil, err
	}
	s, err := start(kind, path)
	if err != nil {
		return nil, nil, err
	}
	return s, s.stop, nil
}

// errAddrInUse marks a start that failed because the port was taken.
var errAddrInUse = errors.New("address already in use")

// start runs the binary at path in a new temporary directory on a free
// port, retrying on another port when the chosen one was taken meanwhile.
func start(kind Kind, path string) (*Server, error) {
	dir, err := os.MkdirTemp("", "ratelua-"+string(kind)+"-")
	if err != nil {
		return nil, fmt.Errorf("testserver: %w", err)
	}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("testserver: free port: %w", err)
		}
		s, err := launch(kind, path, dir, port)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) || attempt == portAttempts {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts one server process in dir on port and waits until it
// answers.
func launch(kind Kind, path, dir string, port int) (*Server, error) {
	logPath := filepath.Join(dir, "server.log")
	os.Remove(logPath) // from an earlier attempt
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testserver: %w", err)
	}
	defer logFile.Close() // the child has its own descriptor

	cmd := exec.Command(path,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--dir", dir,
		"--logfile", logPath,
	)
	cmd.Dir = dir
	cmd.Stdout = logFile // errors before the logfile is open go here
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testserver: start %s: %w", path, err)
	}
	s := &Server{
		Kind: kind,
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		path: path,
		dir:  dir,
		cmd:  cmd,
		done: make(chan struct{}),
	}
	go func() {
		cmd.Wait()
		close(s.done)
	}()

	if err := s.waitReady(); err != nil {
		s.kill()
		tail := logTail(logPath)
		if strings.Contains(tail, "Address already in use") {
			err = fmt.Errorf("%w: %v", errAddrInUse, err)
		}
		return nil, fmt.Errorf("testserver: %s on port %d: %w\n%s", path, port, err, tail)
	}
	return s, nil
}

// waitReady polls until the server answers PING and INFO shows it is this
// process (and not another one that holds the port), then sets Version.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		select {
		case <-s.done:
			return fmt.Errorf("exited (%v) before answering PING", s.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PING answer within %v (last: %v)", readyTimeout, last)
		}
		version, pid, err := probe(s.Addr, s.Kind, s.done)
		switch {
		case err != nil:
			last = err
		case pid != s.cmd.Process.Pid:
			last = fmt.Errorf("port answered by process %d, not %d", pid, s.cmd.Process.Pid)
		default:
			s.Version = version
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// probe sends PING and INFO server and returns the version and process id.
// It gives up early when exited is closed (whoever answers then is not our
// server).
func probe(addr string, kind Kind, exited <-chan struct{}) (version string, pid int, err error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", 0, err
	}
	defer c.Close()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-exited:
			c.Close()
		case <-finished:
		}
	}()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(c)
	if pong, err := command(c, r, "PING"); err != nil {
		return "", 0, err
	} else if pong != "PONG" {
		return "", 0, fmt.Errorf("PING answered %q", pong)
	}
	info, err := command(c, r, "INFO", "server")
	if err != nil {
		return "", 0, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	version = fields["redis_version"]
	if kind == Valkey {
		version = fields["valkey_version"]
	}
	if version == "" {
		return "", 0, fmt.Errorf("INFO server has no version for %s", kind)
	}
	pid, err = strconv.Atoi(fields["process_id"])
	if err != nil {
		return "", 0, fmt.Errorf("INFO server process_id: %w", err)
	}
	return version, pid, nil
}

// command writes one RESP command and reads a simple, error, integer or
// bulk string reply.
func command(w io.Writer, r *bufio.Reader, args ...string) (string, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("server error: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("bad bulk reply %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// logTail returns the last lines of the log at path, for error messages.
func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return "server log " + path + ":\n\t" + strings.Join(lines, "\n\t")
}

// kill ends the process at once and waits until it is reaped.
func (s *Server) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// Stop ends the server before the test does (to test an unreachable
// server); the cleanup then has nothing left to do. It is safe to call more
// than once.
func (s *Server) Stop() { s.stop() }

// stop ends the server (SIGTERM, then SIGKILL after stopTimeout) and removes
// its directory. It is safe to call more than once.
func (s *Server) stop() {
	s.once.Do(func() {
		select {
		case <-s.done:
		default:
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				s.kill()
				break
			}
			t := time.NewTimer(stopTimeout)
			select {
			case <-s.done:
				t.Stop()
			case <-t.C:
				s.kill()
			}
		}
		os.RemoveAll(s.dir)
	})
}
