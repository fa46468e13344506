package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ratelua/ratelua"
)

func runReset(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("reset", "ratelua reset --addr HOST:PORT (NAME@VERSION KEY limit... | --prefix PREFIX)", `
With a script and a key, resets that key's limiter state: the script's reset
call (eventCount -1), which checks the limits first, so give the limits the
key is used with. With --prefix, deletes the state of every limiter whose
Options.Prefix is exactly PREFIX (the keys PREFIX:{...}:<script>:v<N>:<hash>,
no other key) on every master, by SCAN and UNLINK, never KEYS; with
--dry-run it only counts them. Progress goes to stderr when it is a
terminal, the count to stdout.`,
		`ratelua reset --addr 127.0.0.1:6379 `+newest("sliding_window")+` 'login:{203.0.113.7}' 1 5000 1000 5 3600000 600000`,
		`ratelua reset --addr 127.0.0.1:7000 --prefix login --dry-run`,
		`ratelua reset --addr 127.0.0.1:7000 --prefix login`)
	sf := addServerFlags(fs, true)
	unit := fs.String("unit", "ms", "the `UNIT` of the limits' durations: s, ms or us")
	prefix := fs.String("prefix", "", "delete the state of every limiter whose prefix is `PREFIX` (instead of one key's state)")
	dryRun := fs.Bool("dry-run", false, "with --prefix, count the keys that would be deleted and delete nothing (with a KEY, a usage error)")
	pos, err := fs.parse(e, args)
	if err != nil {
		return err
	}
	prefixSet := false
	fs.Visit(func(f *flag.Flag) { prefixSet = prefixSet || f.Name == "prefix" })
	if prefixSet {
		if len(pos) > 0 {
			return usagef("reset", "reset: --prefix takes no NAME@VERSION or KEY, got %s", quoted(pos[0]))
		}
		if *prefix == "" || strings.ContainsAny(*prefix, "{}") {
			return usagef("reset", "reset: --prefix must be non-empty without '{' or '}', got %s", quoted(*prefix))
		}
		return resetPrefix(ctx, e, sf, *prefix, *dryRun)
	}
	if *dryRun {
		// A key's reset has no dry run: refuse rather than delete.
		return usagef("reset", "reset: --dry-run only counts the keys of --prefix; it cannot go with NAME@VERSION KEY (nothing was reset)")
	}
	if len(pos) == 0 {
		return usagef("reset", "reset: want NAME@VERSION KEY limit... or --prefix PREFIX")
	}
	script, err := parseScript("reset", pos[0])
	if err != nil {
		return err
	}
	if len(pos) < 3 {
		return usagef("reset", "reset: want NAME@VERSION KEY limit... (the script checks the limits), got %d arguments", len(pos))
	}
	key := pos[1]
	argv := append([]string{"-1", *unit, "", "0"}, pos[2:]...)
	client, err := sf.connect("reset")
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, *sf.timeout)
	defer cancel()
	if _, err := execScript(ctx, client, script, key, argv); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	fmt.Fprintf(e.stdout, "reset %s\n", key)
	return nil
}

// resetPrefix runs ratelua.ResetPrefixWith with a progress line on a terminal.
func resetPrefix(ctx context.Context, e *env, sf serverFlags, prefix string, dryRun bool) error {
	client, err := sf.connect("reset")
	if err != nil {
		return err
	}
	defer client.Close()
	verb := "deleted"
	if dryRun {
		verb = "would delete"
	}
	var progress func(int64)
	p := &progressBar{w: e.stderr, label: verb + " " + quoted(prefix) + ":{*}"}
	if e.terminal(e.stderr) {
		progress = p.update
	}
	n, err := ratelua.ResetPrefixWith(ctx, ratelua.Rueidis(client), prefix, ratelua.ResetOptions{DryRun: dryRun, Progress: progress})
	// Clear the progress line before anything else is printed.
	p.done()
	if errors.Is(err, ratelua.ErrInvalidLimit) {
		// A prefix no limiter can have (too long): refused before any key
		// was read.
		return usagef("reset", "reset: --prefix %s: %v", quoted(prefix), err)
	}
	if err != nil {
		return fmt.Errorf("reset --prefix %s: %w (%s %s before)", quoted(prefix), err, verb, plural(n, "key", "keys"))
	}
	fmt.Fprintf(e.stdout, "%s %s\n", verb, plural(n, "key", "keys"))
	return nil
}

// progressBar redraws one line on a terminal: a spinner-like bar (the
// total is unknown while SCAN runs) and the count so far.
type progressBar struct {
	w     io.Writer
	label string
	ticks int
	drawn bool
}

func (p *progressBar) update(deleted int64) {
	const width = 20
	pos := p.ticks % (2 * (width - 3))
	if pos >= width-3 {
		pos = 2*(width-3) - pos
	}
	p.ticks++
	bar := []byte(strings.Repeat(" ", width))
	copy(bar[pos:], "###")
	fmt.Fprintf(p.w, "\r\033[K%s [%s] %s", p.label, bar, plural(deleted, "key", "keys"))
	p.drawn = true
}

// done erases the progress line.
func (p *progressBar) done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
