// Command ratelua inspects, loads and calls the ratelua scripts, and shows
// them at work.
//
//	go install github.com/ratelua/ratelua/cmd/ratelua@latest
//
//	ratelua scripts [--json | --source NAME@VERSION]
//	ratelua load --addr HOST:PORT [--functions]
//	ratelua call NAME@VERSION --addr HOST:PORT KEY eventCount now mode limit...
//	ratelua reset --addr HOST:PORT (NAME@VERSION KEY limit... | --prefix PREFIX)
//	ratelua demo [--addr HOST:PORT] [--script NAME]
//
// Every subcommand has --help. Errors are one line on stderr starting with
// "ratelua: ". Exit codes: 0 ok; 1 a denied decision (call) or an
// operational failure; 2 a usage error (bad flags or arguments, including an
// argument the script rejects with "ERR ratelua:"); 3 the server could not
// be reached.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1 // a denied decision, or an operational failure
	exitUsage       = 2 // bad flags or arguments
	exitUnreachable = 3 // the server could not be reached
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

var commands = []command{
	{"scripts", "list the embedded scripts, print the manifest or a script's source", runScripts},
	{"load", "load the scripts (or the Functions library) on every node", runLoad},
	{"call", "one raw EVALSHA of a script, reply printed by field name", runCall},
	{"reset", "reset one key's limiter state, or delete every key under a prefix", runReset},
	{"demo", "the login limiter over simulated time, as a timeline", runDemo},
}

// env is what a subcommand writes to and how it reaches a server.
type env struct {
	stdout, stderr io.Writer
	// terminal reports whether w is a terminal (for progress output).
	terminal func(w io.Writer) bool
}

// run runs the command line args (without the program name) and returns
// the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e := &env{stdout: stdout, stderr: stderr, terminal: terminal}
	return e.exit(dispatch(ctx, e, args))
}

func dispatch(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("", "no command")
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if name == "help" && len(args) > 1 {
			return dispatch(ctx, e, []string{args[1], "--help"})
		}
		printOverview(e.stdout)
		return nil
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, e, args[1:])
		}
	}
	if strings.HasPrefix(name, "-") {
		return usagef("", "flag %s before a command", name)
	}
	return usagef("", "unknown command %s", quoted(name))
}

func printOverview(w io.Writer) {
	fmt.Fprint(w, `ratelua: rate limiters that run atomically inside Valkey and Redis as
versioned Lua scripts.

Usage: ratelua COMMAND [flags] [arguments]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'ratelua COMMAND --help' for a command's flags and an example.

Exit codes: 0 ok; 1 a denied decision (call) or an operational failure;
2 a usage error; 3 the server could not be reached.

Example:
  ratelua demo
`)
}

// errDenied is a decision that was not allowed: exit 1, nothing on stderr.
var errDenied = errors.New("denied")

// errHelp is --help: the help was printed, exit 0.
var errHelp = flag.ErrHelp

// usageError is a bad flag or argument: exit 2.
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string {
	hint := "run 'ratelua --help'"
	if e.cmd != "" {
		hint = "run 'ratelua " + e.cmd + " --help'"
	}
	return e.msg + " (" + hint + ")"
}

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// badArgsError is an argument the script rejected ("ERR ratelua: ..."):
// a usage error found by the server, exit 2.
type badArgsError struct{ err error }

func (e *badArgsError) Error() string { return e.err.Error() }
func (e *badArgsError) Unwrap() error { return e.err }

// exit reports err on one line of stderr and returns its exit code.
func (e *env) exit(err error) int {
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.Is(err, errDenied):
		return exitFailure
	}
	fmt.Fprintln(e.stderr, "ratelua: "+oneLine(err.Error()))
	var ue *usageError
	var be *badArgsError
	switch {
	case errors.As(err, &ue), errors.As(err, &be):
		return exitUsage
	case unreachable(err):
		return exitUnreachable
	}
	return exitFailure
}

// oneLine makes msg one line, without a repeated "ratelua: " prefix.
func oneLine(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	for strings.HasPrefix(msg, "ratelua: ") {
		msg = strings.TrimPrefix(msg, "ratelua: ")
	}
	return strings.ReplaceAll(msg, ": ratelua: ", ": ")
}

// unreachable reports an error that kept the command from the server: a
// network failure, a timeout, or what ratelua classifies as unavailable.
func unreachable(err error) bool {
	var re *rueidis.RedisError
	var se *ratelua.ServerError
	if errors.As(err, &re) || errors.As(err, &se) {
		// An answer from the server; LOADING and the like are unavailability.
		return errors.Is(err, ratelua.ErrUnavailable)
	}
	var ne net.Error
	var oe *net.OpError
	return errors.Is(err, ratelua.ErrUnavailable) || errors.As(err, &ne) || errors.As(err, &oe) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, rueidis.ErrClosing) ||
		errors.Is(err, rueidis.ErrNoSlot)
}

// terminal reports whether a writer is a terminal; tests replace it.
var terminal = isTerminal

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ---- flags ----

// flagSet is a subcommand's flags with its help text.
type flagSet struct {
	*flag.FlagSet
	cmd      string
	usage    string // the synopsis, after "Usage: "
	about    string // what the command does
	examples []string
}

func newFlagSet(cmd, usage, about string, examples ...string) *flagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, cmd: cmd, usage: usage, about: about, examples: examples}
}

// printHelp writes the usage, the flags and the examples.
func (fs *flagSet) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", fs.usage, strings.TrimSpace(fs.about))
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if name != "" {
			head += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		lines = append(lines, fmt.Sprintf("%s\n      %s", head, usage))
	})
	lines = append(lines, "  --help\n      print this help")
	fmt.Fprintf(w, "\nFlags:\n%s\n", strings.Join(lines, "\n"))
	fmt.Fprintf(w, "\nExample%s:\n", map[bool]string{true: "s"}[len(fs.examples) > 1])
	for _, ex := range fs.examples {
		fmt.Fprintf(w, "  %s\n", ex)
	}
}

// parse parses args, flags and arguments in any order ("--" ends the
// flags; "-" and negative numbers are arguments), and returns the
// arguments. --help prints the help to stdout and returns errHelp.
func (fs *flagSet) parse(e *env, args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' || isNumber(a) {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.printHelp(e.stdout)
			return nil, errHelp
		}
		return nil, usagef(fs.cmd, "%s: %v", fs.cmd, err)
	}
	return pos, nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// ---- servers ----

// serverFlags are the flags of a command that talks to a server.
type serverFlags struct {
	addr    *string
	timeout *time.Duration
}

func addServerFlags(fs *flagSet, required bool) serverFlags {
	help := "the server `HOST:PORT` (rueidis finds out whether it is a cluster node), several comma-separated, or a redis:// URL"
	if !required {
		help += "; none means the embedded luatest engine"
	}
	return serverFlags{
		addr:    fs.String("addr", "", help),
		timeout: fs.Duration("timeout", 5*time.Second, "connect and command timeout"),
	}
}

// connect returns a client for the --addr flag: rueidis finds out whether
// the address is a cluster node or a single server.
func (sf serverFlags) connect(cmd string) (rueidis.Client, error) {
	addr := strings.TrimSpace(*sf.addr)
	if addr == "" {
		return nil, usagef(cmd, "%s: --addr is required", cmd)
	}
	if *sf.timeout <= 0 {
		return nil, usagef(cmd, "%s: --timeout must be positive", cmd)
	}
	var opt rueidis.ClientOption
	if strings.Contains(addr, "://") {
		var err error
		if opt, err = rueidis.ParseURL(addr); err != nil {
			return nil, usagef(cmd, "%s: --addr %s: %v", cmd, addr, err)
		}
	} else {
		for _, a := range strings.Split(addr, ",") {
			a = strings.TrimSpace(a)
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, usagef(cmd, "%s: --addr %s: want HOST:PORT", cmd, quoted(a))
			}
			opt.InitAddress = append(opt.InitAddress, a)
		}
	}
	opt.DisableCache = true
	opt.Dialer.Timeout = *sf.timeout
	opt.ConnWriteTimeout = *sf.timeout
	client, err := rueidis.NewClient(opt)
	if err != nil {
		if _, answered := rueidis.IsRedisErr(err); !answered {
			// Whatever answered there (if anything) is not a server that
			// speaks RESP: unreachable as a server, exit status 3.
			err = fmt.Errorf("%w: %w", ratelua.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("%s: cannot reach %s: %w", cmd, addr, err)
	}
	return client, nil
}

// ---- scripts by name ----

// parseScript parses NAME@VERSION (the version as 1 or v1) into an embedded
// script.
func parseScript(cmd, s string) (ratelua.Script, error) {
	name, version, ok := strings.Cut(s, "@")
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(version, "v"), "V"))
	if !ok || name == "" || err != nil || n < 1 {
		return ratelua.Script{}, usagef(cmd, "%s: want NAME@VERSION, e.g. %s, got %s", cmd, newest("sliding_window"), quoted(s))
	}
	script, err := ratelua.NewRegistry().Lookup(name, n)
	if err != nil {
		var known []string
		for _, sc := range ratelua.Scripts() {
			known = append(known, sc.String())
		}
		slices.Sort(known)
		return ratelua.Script{}, usagef(cmd, "%s: unknown script %s@v%d (known: %s)", cmd, name, n, strings.Join(known, ", "))
	}
	return script, nil
}

// plural returns "1 key" or "n keys".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// quoted quotes a value from the command line for a message: escaped, and
// cut after 64 bytes with its length noted.
func quoted(s string) string {
	const most = 64
	if len(s) <= most {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:most]) + fmt.Sprintf("...(%d bytes)", len(s))
}

// newest names the newest version of the script name, "name@vN", for the
// help's examples: the version the Go API calls by default, so that an
// example never names a version the manifest lacks.
func newest(name string) string {
	version := 0
	for _, s := range ratelua.Scripts() {
		if s.Name == name {
			version = max(version, s.Version)
		}
	}
	return fmt.Sprintf("%s@v%d", name, version)
}
