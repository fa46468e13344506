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
// that of LASTSAVE then ECHO alone (the two markers' share of call()) and
// less the Lua collector's periodic calls (see collectorFunc). The
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
	if err := quietCollector(ctx, node); err != nil {
		node.Close()
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	// The markers' count: the smallest of three, as the first LASTSAVE
	// and ECHO of a connection may take another path (a buffer grown).
	for i := range 3 {
		n, err := s.count(ctx, func() error { return nil })
		if err != nil {
			node.Close()
			return nil, err
		}
		if i == 0 || n.total < s.markers {
			s.markers = n.total
		}
	}
	return s, nil
}

// Close stops the server and removes its directory with the dumps.
func (s *cgServer) Close() error { return s.node.Close() }

// cgCount is what one window between the markers executed inside call():
// every instruction, and the share of it in the Lua collector's periodic
// calls (see collectorFunc).
type cgCount struct {
	total     int64
	collector int64 // inclusive instructions of the calls to collectorFunc
	steps     int64 // the number of those calls
}

// count runs LASTSAVE, work, ECHO on the node's own connection and returns
// the instructions inside call() between the two markers (the markers'
// share included), read from the dump ECHO wrote.
func (s *cgServer) count(ctx context.Context, work func() error) (cgCount, error) {
	if _, err := s.node.Do(ctx, "LASTSAVE"); err != nil {
		return cgCount{}, fmt.Errorf("lastsave: %w", err)
	}
	if err := work(); err != nil {
		return cgCount{}, err
	}
	if _, err := s.node.Do(ctx, "ECHO", "ratelua-instructions"); err != nil {
		return cgCount{}, fmt.Errorf("echo: %w", err)
	}
	s.dumps++
	path := filepath.Join(s.node.Dir, callgrindOut+"."+strconv.Itoa(s.dumps))
	c, err := readDump(path)
	if err != nil {
		return cgCount{}, err
	}
	os.Remove(path)
	return c, nil
}

// measure is count less the markers' share.
func (s *cgServer) measure(ctx context.Context, work func() error) (cgCount, error) {
	c, err := s.count(ctx, work)
	c.total -= s.markers
	return c, err
}

// The Lua garbage collector is set apart from every count. By default its
// work lands on whichever call happens to trigger it: after every 50th
// script call (LUA_GC_CYCLE_PERIOD, one counter for every script and
// function) the server calls lua_gc(LUA_GCSTEP, 50), a fixed budget of
// collection work whatever the script, and inside a script each KiB it
// allocates advances the cycle by a step. What a unit of that work costs
// depends on where the cycle is over the whole Lua heap (marking, sweeping
// strings, sweeping objects), so it is set by the calls and the scripts
// before a count, not by the calls in it: in one run a periodic step cost
// 56k to 455k instructions (1k to 9k per call) by the row's place in the
// run, and the same peer's own calls 6-10% more at the end of a full run
// than of a short one. quietCollector makes each collection one whole
// cycle taken by the periodic call alone (no step inside a script), and
// the count of each window leaves out those calls (collectorFunc): a
// figure is the script's work and the server's for it, the same wherever
// the row runs.
//
// collectorFunc is the Lua API call the periodic collection goes through.
const collectorFunc = "lua_gc"

// quietCollectorLua sets the collector of a Lua state so that a
// collection is only ever one whole cycle, taken by the periodic lua_gc
// call: a step multiplier so large that one step finishes the cycle, and
// a pause so long that no allocation starts one (the periodic call starts
// each, so the heap is still collected every 50 calls).
const quietCollectorLua = `collectgarbage('setpause', 100000)
collectgarbage('setstepmul', 1000000)
collectgarbage('collect')
return collectgarbage('count')`

// quietCollectorLibrary holds quietCollectorLua as a function, for FCALL's
// Lua state.
const quietCollectorLibrary = "#!lua name=ratelua_bench\n" +
	"redis.register_function('ratelua_bench_collector', function()\n" + quietCollectorLua + "\nend)"

// quietCollector applies quietCollectorLua on both Lua states of node: the
// one of EVAL and EVALSHA, and the one of FCALL.
func quietCollector(ctx context.Context, node *testbench.Node) error {
	if _, err := node.Do(ctx, "EVAL", quietCollectorLua, "0"); err != nil {
		return fmt.Errorf("the collector of EVAL's Lua state: %w", err)
	}
	if _, err := node.Do(ctx, "FUNCTION", "LOAD", "REPLACE", quietCollectorLibrary); err != nil {
		return fmt.Errorf("the collector of FCALL's Lua state: %w", err)
	}
	if _, err := node.Do(ctx, "FCALL", "ratelua_bench_collector", "0"); err != nil {
		return fmt.Errorf("the collector of FCALL's Lua state: %w", err)
	}
	return nil
}

// readDump reads a callgrind dump: the "summary:" (or "totals:") line,
// the instructions (Ir) it holds, and the calls to collectorFunc and
// their inclusive cost (a "cfn=" line naming it, its "calls=" line with
// their number, then the cost line, whose last field is the Ir).
func readDump(path string) (cgCount, error) {
	f, err := os.Open(path)
	if err != nil {
		return cgCount{}, fmt.Errorf("callgrind dump: %w", err)
	}
	defer f.Close()
	var c cgCount
	found := false
	names := map[string]string{} // compressed names: "(id)" to the name
	// state: 0 outside a call to the collector, 1 after its cfn= line, 2
	// after its calls= line (the next line is the cost).
	state := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case state == 1 && strings.HasPrefix(line, "calls="):
			fields := strings.Fields(strings.TrimPrefix(line, "calls="))
			if len(fields) == 0 {
				return cgCount{}, fmt.Errorf("callgrind dump %s: %q: no number of calls", path, line)
			}
			n, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				return cgCount{}, fmt.Errorf("callgrind dump %s: %q: %w", path, line, err)
			}
			c.steps += n
			state = 2
			continue
		case state == 2:
			fields := strings.Fields(line)
			if len(fields) < 2 {
				return cgCount{}, fmt.Errorf("callgrind dump %s: cost line %q after a call to %s", path, line, collectorFunc)
			}
			n, err := strconv.ParseInt(fields[len(fields)-1], 10, 64)
			if err != nil {
				return cgCount{}, fmt.Errorf("callgrind dump %s: %q: %w", path, line, err)
			}
			c.collector += n
			state = 0
			continue
		}
		state = 0
		if v, ok := strings.CutPrefix(line, "fn="); ok {
			calledName(names, v) // a compressed name's first mention
			continue
		}
		if v, ok := strings.CutPrefix(line, "cfn="); ok {
			if calledName(names, v) == collectorFunc {
				state = 1
			}
			continue
		}
		for _, p := range []string{"summary:", "totals:"} {
			if v, ok := strings.CutPrefix(line, p); ok && !found {
				n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				if err != nil {
					return cgCount{}, fmt.Errorf("callgrind dump %s: %q: %w", path, line, err)
				}
				c.total, found = n, true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return cgCount{}, fmt.Errorf("callgrind dump %s: %w", path, err)
	}
	if !found {
		return cgCount{}, fmt.Errorf("callgrind dump %s: no summary line", path)
	}
	if state != 0 {
		return cgCount{}, fmt.Errorf("callgrind dump %s: ends within a call to %s", path, collectorFunc)
	}
	return c, nil
}

// calledName is the function a "cfn=" line names: "name", or, when
// callgrind compresses names, "(id) name" at the first mention (kept in
// names) and "(id)" alone at the later ones.
func calledName(names map[string]string, v string) string {
	if !strings.HasPrefix(v, "(") {
		return v
	}
	id, name, ok := strings.Cut(v, ") ")
	if !ok {
		return names[v]
	}
	names[id+")"] = name
	return name
}
