package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/durfmt"
	"github.com/ratelua/ratelua/luatest"
)

// demoLimits is the login case (at most 1 attempt per 5 s AND 5 per hour)
// in one script's limits, in milliseconds, with a name for each limit.
type demoLimits struct {
	argv  []string
	about []string // what each limit is, for the timeline
}

// demos are the README's per-script equivalents of the login case.
var demos = map[string]demoLimits{
	ratelua.SlidingWindow: {
		argv:  []string{"1", "5000", "1000", "5", "3600000", "600000"},
		about: []string{"1 per 5s", "5 per 1h"},
	},
	ratelua.ZSetLog: {
		argv:  []string{"1", "5000", "5", "3600000"},
		about: []string{"1 per 5s", "5 per 1h"},
	},
	ratelua.TokenBucket: {
		argv:  []string{"1", "1", "5000", "5", "1", "720000"},
		about: []string{"1 token, +1 per 5s", "5 tokens, +1 per 12m"},
	},
	ratelua.AR1: {
		argv:  []string{"1", "2000", "5000", "5", "2000", "3600000"},
		about: []string{"max 1, halved every 5s", "max 5, halved every 1h"},
	},
}

// demoStart is the simulated time of the first attempt: a whole hour, so
// that every limit's buckets start with it.
var demoStart = time.Date(2023, 11, 14, 22, 0, 0, 0, time.UTC)

// demoEventKey is the client's address; the state key is under "demo:".
const demoEventKey = "203.0.113.7"

// demoSchedule is when the client tries: every 2 s for a minute, then
// again an hour after it started, every 2 s for 10 s.
func demoSchedule() []time.Duration {
	var at []time.Duration
	for s := 0; s < 60; s += 2 {
		at = append(at, time.Duration(s)*time.Second)
	}
	for s := 3600; s <= 3610; s += 2 {
		at = append(at, time.Duration(s)*time.Second)
	}
	return at
}

// demoBackend runs the script at a simulated time.
type demoBackend interface {
	// where says what runs the script and which clock it reads.
	where() string
	// run calls the script with argv, whose now (argv[2]) the backend sets
	// for the simulated time at.
	run(ctx context.Context, at time.Duration, key string, argv []string) ([]int64, error)
}

func runDemo(ctx context.Context, e *env, args []string) error {
	names := make([]string, 0, len(demos))
	for name := range demos {
		names = append(names, name)
	}
	slices.Sort(names)
	fs := newFlagSet("demo", "ratelua demo [--addr HOST:PORT] [--script NAME] [--count-denied]", `
Shows the login case — at most 1 attempt per 5s AND 5 per hour from one
address — over simulated time: a client retrying every 2s for a minute, then
again an hour later, as a timeline of decisions and waits. Without --addr it
runs on the embedded luatest engine (the released script sources, the
engine's clock advanced by the demo; nothing to install). With --addr it runs
the same against a real server or cluster, passing the simulated time as the
caller's clock, on a key under "demo:" that it resets first.`,
		"ratelua demo",
		"ratelua demo --script token_bucket",
		"ratelua demo --addr 127.0.0.1:6379 --count-denied")
	sf := addServerFlags(fs, false)
	name := fs.String("script", ratelua.SlidingWindow, "the `NAME` of the script: "+strings.Join(names, ", "))
	countDenied := fs.Bool("count-denied", false, "mode 1: count denied attempts too (a client that keeps retrying stays blocked)")
	pos, err := fs.parse(e, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("demo", "demo: unexpected argument %s", quoted(pos[0]))
	}
	limits, ok := demos[*name]
	if !ok {
		return usagef("demo", "demo: --script must be one of %s, got %s", strings.Join(names, ", "), quoted(*name))
	}
	script, err := ratelua.NewRegistry().Latest(*name)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	mode := "0"
	if *countDenied {
		mode = "1"
	}
	key := fmt.Sprintf("demo:{%s}:%s:v%d", demoEventKey, script.Name, script.Version)

	var backend demoBackend
	if strings.TrimSpace(*sf.addr) == "" {
		backend = &engineBackend{e: luatest.New(luatest.Options{Now: demoStart}), src: script.Source}
	} else {
		client, err := sf.connect("demo")
		if err != nil {
			return err
		}
		defer client.Close()
		b := &serverBackend{client: client, script: script, addr: *sf.addr, timeout: *sf.timeout}
		// Start fresh: the script's reset of the demo key.
		reset := append([]string{"-1", "ms", "", "0"}, limits.argv...)
		if _, err := b.exec(ctx, key, reset); err != nil {
			return fmt.Errorf("demo: reset %s: %w", key, err)
		}
		backend = b
	}
	return demoTimeline(ctx, e.stdout, backend, script, key, mode, limits)
}

// demoTimeline runs the schedule and writes the timeline.
func demoTimeline(ctx context.Context, w io.Writer, b demoBackend, s ratelua.Script, key, mode string, l demoLimits) error {
	counted := "denied attempts are not counted"
	if mode == "1" {
		counted = "every attempt is counted, denied or not"
	}
	var limits []string
	for i, a := range l.about {
		limits = append(limits, fmt.Sprintf("limit %d: %s", i+1, a))
	}
	fmt.Fprintf(w, "ratelua demo: login attempts from %s, at most 1 per 5s AND 5 per 1h\n", demoEventKey)
	fmt.Fprintf(w, "  script  %s, %s\n", s, strings.Join(limits, "; "))
	fmt.Fprintf(w, "  call    EVALSHA %s 1 %s 1 ms NOW %s %s\n", s.SHA1, key, mode, strings.Join(l.argv, " "))
	fmt.Fprintf(w, "  mode    %s: %s\n", mode, counted)
	fmt.Fprintf(w, "  runs on %s\n", b.where())
	fmt.Fprintf(w, "  client  retries every 2s for a minute, then again an hour later\n\n")

	admitted, attempts := 0, 0
	var last time.Duration
	for i, at := range demoSchedule() {
		if i > 0 && at-last > time.Minute {
			fmt.Fprintf(w, "%-12s (no attempts for %s)\n", "...", durfmt.Short(at-last))
		}
		last = at
		argv := append([]string{"1", "ms", "", mode}, l.argv...)
		r, err := b.run(ctx, at, key, argv)
		if err != nil {
			return fmt.Errorf("demo: attempt %d at +%s: %w", i+1, durfmt.Short(at), err)
		}
		attempts++
		line := fmt.Sprintf("%-12s attempt %-3d ", "t=+"+durfmt.Short(at), i+1)
		if r[0] == 1 {
			admitted++
			line += fmt.Sprintf("ADMITTED  remaining %d", r[1])
		} else {
			wait := "retry never"
			if r[2] >= 0 {
				wait = "retry in " + durfmt.Short(time.Duration(r[2])*time.Millisecond)
			}
			about := "?"
			if n := int(r[4]); n >= 1 && n <= len(l.about) {
				about = l.about[n-1]
			}
			line += fmt.Sprintf("denied    %s (limit %d: %s)", wait, r[4], about)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "\nadmitted %d of %d attempts\n", admitted, attempts)
	return nil
}

// engineBackend runs the script on a luatest engine whose clock the demo
// sets: now is "" and the script reads the engine's TIME.
type engineBackend struct {
	e   *luatest.Engine
	src string
}

func (b *engineBackend) where() string {
	return "the embedded luatest engine; NOW is \"\": the engine's TIME, advanced by the demo from " + demoStart.Format(time.RFC3339)
}

func (b *engineBackend) run(_ context.Context, at time.Duration, key string, argv []string) ([]int64, error) {
	b.e.SetNow(demoStart.Add(at))
	argv[2] = ""
	res, err := b.e.Run(b.src, []string{key}, argv)
	if err != nil {
		return nil, err
	}
	arr, ok := res.Reply.([]any)
	if !ok || len(arr) != 5 {
		return nil, fmt.Errorf("reply %v, want five integers", res.Reply)
	}
	out := make([]int64, len(arr))
	for i, v := range arr {
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("reply %v, want five integers", res.Reply)
		}
		out[i] = n
	}
	return out, nil
}

// serverBackend runs the script on a server, passing the simulated time as
// the caller's clock.
type serverBackend struct {
	client  rueidis.Client
	script  ratelua.Script
	addr    string
	timeout time.Duration
}

func (b *serverBackend) where() string {
	return b.addr + "; NOW is the caller's clock: the simulated time in ms from " + demoStart.Format(time.RFC3339)
}

func (b *serverBackend) run(ctx context.Context, at time.Duration, key string, argv []string) ([]int64, error) {
	argv[2] = strconv.FormatInt(demoStart.Add(at).UnixMilli(), 10)
	return b.exec(ctx, key, argv)
}

func (b *serverBackend) exec(ctx context.Context, key string, argv []string) ([]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return execScript(ctx, b.client, b.script, key, argv)
}
