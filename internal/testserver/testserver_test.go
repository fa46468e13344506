package testserver

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ping sends PING to addr and returns an error unless it answers PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	got, err := command(c, bufio.NewReader(c), "PING")
	if err != nil {
		return err
	}
	if got != "PONG" {
		return fmt.Errorf("PING answered %q", got)
	}
	return nil
}

// wantMajor is the major version each kind must have on the CI machine.
var wantMajor = map[Kind]string{Redis: "7.", Valkey: "8."}

// checkGone fails unless the server's process has exited and its directory
// is gone.
func checkGone(t *testing.T, s *Server) {
	t.Helper()
	select {
	case <-s.done:
	default:
		t.Fatalf("%s: process %d still running after stop", s.Kind, s.cmd.Process.Pid)
	}
	if err := syscall.Kill(s.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("%s: kill(%d, 0) = %v, want ESRCH", s.Kind, s.cmd.Process.Pid, err)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("%s: dir %s still there after stop (stat: %v)", s.Kind, s.dir, err)
	}
	if err := ping(s.Addr); err == nil {
		t.Errorf("%s: %s still answers PING after stop", s.Kind, s.Addr)
	}
}

func TestStart(t *testing.T) {
	for _, kind := range []Kind{Redis, Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			var s *Server
			// The inner test's cleanup stops the server.
			t.Run("run", func(t *testing.T) {
				s = Start(t, kind)
				if s.Kind != kind {
					t.Errorf("Kind = %q, want %q", s.Kind, kind)
				}
				if !strings.HasPrefix(s.Version, wantMajor[kind]) {
					t.Errorf("Version = %q, want %s*", s.Version, wantMajor[kind])
				}
				if err := ping(s.Addr); err != nil {
					t.Fatalf("PING %s: %v", s.Addr, err)
				}
				if fi, err := os.Stat(s.dir); err != nil || !fi.IsDir() {
					t.Fatalf("dir %s: %v", s.dir, err)
				}
				t.Logf("%s %s at %s (pid %d)", kind, s.Version, s.Addr, s.cmd.Process.Pid)
			})
			if s == nil {
				t.SkipNow() // skipped: binary missing outside CI
			}
			checkGone(t, s)
		})
	}
}

func TestParallelPorts(t *testing.T) {
	for _, kind := range []Kind{Redis, Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			var (
				wg      sync.WaitGroup
				servers [2]*Server
			)
			for i := range servers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Start may Skip or Fatal only from the test goroutine.
					if _, ok := Available(kind); !ok {
						return
					}
					s, stop, err := StartMain(kind)
					if err != nil {
						t.Error(err)
						return
					}
					t.Cleanup(stop)
					servers[i] = s
				}()
			}
			wg.Wait()
			if _, ok := Available(kind); !ok {
				Start(t, kind) // skips, or fails under CI
				return
			}
			if t.Failed() {
				return
			}
			a, b := servers[0], servers[1]
			if a.Addr == b.Addr {
				t.Fatalf("both servers at %s", a.Addr)
			}
			if a.dir == b.dir {
				t.Fatalf("both servers in %s", a.dir)
			}
			for _, s := range servers {
				if err := ping(s.Addr); err != nil {
					t.Errorf("PING %s: %v", s.Addr, err)
				}
			}
		})
	}
}

func TestStartMainStop(t *testing.T) {
	if _, ok := Available(Redis); !ok {
		Start(t, Redis) // skips, or fails under CI
		return
	}
	s, stop, err := StartMain(Redis)
	if err != nil {
		t.Fatal(err)
	}
	if err := ping(s.Addr); err != nil {
		t.Fatalf("PING %s: %v", s.Addr, err)
	}
	stop()
	stop() // idempotent
	checkGone(t, s)
}

// TestPortTaken starts a server on a port another listener holds: the
// server must not be mistaken for ready (the other listener does not speak
// RESP) and the error must say why.
func TestPortTaken(t *testing.T) {
	path, ok := Available(Redis)
	if !ok {
		Start(t, Redis)
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dir := t.TempDir()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = launch(Redis, path, dir, port)
	if err == nil {
		t.Fatal("start on a taken port succeeded")
	}
	t.Log(err)
	if !errors.Is(err, errAddrInUse) {
		t.Fatalf("error does not mark address in use: %v", err)
	}
	for _, want := range []string{path, fmt.Sprint(port), "Address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// fakeTB records Skip and Fatal instead of ending the test.
type fakeTB struct {
	testing.TB
	skipped, fatal string
}

func (f *fakeTB) Helper()              {}
func (f *fakeTB) Cleanup(func())       {}
func (f *fakeTB) Skip(args ...any)     { f.skipped = fmt.Sprint(args...) }
func (f *fakeTB) Fatal(args ...any)    { f.fatal = fmt.Sprint(args...) }
func (f *fakeTB) Skipf(string, ...any) { panic("unused") }

func TestMissingBinary(t *testing.T) {
	t.Setenv("RATELUA_REDIS_SERVER", "/nonexistent/redis-server")
	if p, ok := Available(Redis); ok {
		t.Fatalf("Available = %q, true for a missing binary", p)
	}

	t.Setenv("CI", "")
	f := &fakeTB{TB: t}
	if s := Start(f, Redis); s != nil || f.skipped == "" || f.fatal != "" {
		t.Errorf("outside CI: server %v, skip %q, fatal %q; want a skip", s, f.skipped, f.fatal)
	}
	if strings.Contains(f.skipped, "\n") || !strings.Contains(f.skipped, "RATELUA_REDIS_SERVER") {
		t.Errorf("skip reason not one line naming the variable: %q", f.skipped)
	}

	t.Setenv("CI", "true")
	f = &fakeTB{TB: t}
	if s := Start(f, Redis); s != nil || f.fatal == "" || f.skipped != "" {
		t.Errorf("under CI: server %v, skip %q, fatal %q; want a fatal", s, f.skipped, f.fatal)
	}

	if _, _, err := StartMain(Redis); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("StartMain error = %v, want one wrapping exec.ErrNotFound", err)
	}
}

// TestNoOrphan runs a child test process that starts a server and then dies
// by SIGKILL without stopping it: the server must die with it.
func TestNoOrphan(t *testing.T) {
	if os.Getenv("TESTSERVER_ORPHAN_CHILD") == "1" {
		s, _, err := StartMain(Redis)
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Printf("PID %d %s\n", s.cmd.Process.Pid, s.dir)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signal is Linux only")
	}
	if _, ok := Available(Redis); !ok {
		Start(t, Redis)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoOrphan$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TESTSERVER_ORPHAN_CHILD=1")
	out, _ := cmd.Output() // the child dies by SIGKILL
	var (
		pid int
		dir string
	)
	if _, err := fmt.Sscanf(string(out), "PID %d %s", &pid, &dir); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	defer os.RemoveAll(dir) // nobody else will
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("server %d outlived its test process", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid is a live process (not gone, not a zombie
// waiting for a reaper).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	rest := string(data)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = strings.TrimSpace(rest[i+1:])
	}
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}
