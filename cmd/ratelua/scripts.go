package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/ratelua/ratelua"
)

func runScripts(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("scripts", "ratelua scripts [--json | --source NAME@VERSION]", `
Lists the embedded scripts: name, version, SHA1 (for EVALSHA), the integers
of one limit and the commands a recorded decision costs. --json prints
lua/manifest.json exactly; --source prints a script's exact bytes (what
SCRIPT LOAD hashes to the SHA1).`,
		"ratelua scripts",
		"ratelua scripts --json > manifest.json",
		"ratelua scripts --source "+newest("sliding_window")+" | redis-cli -x SCRIPT LOAD")
	asJSON := fs.Bool("json", false, "print the manifest, byte for byte lua/manifest.json")
	source := fs.String("source", "", "print the exact source of the script `NAME@VERSION` (1 or v1)")
	pos, err := fs.parse(e, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("scripts", "scripts: unexpected argument %s", quoted(pos[0]))
	}
	if *asJSON && *source != "" {
		return usagef("scripts", "scripts: --json and --source are exclusive")
	}
	switch {
	case *asJSON:
		m, err := manifestJSON()
		if err != nil {
			return fmt.Errorf("scripts: %w", err)
		}
		_, err = e.stdout.Write(m)
		return err
	case *source != "":
		s, err := parseScript("scripts", *source)
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(e.stdout, s.Source)
		return err
	}
	scripts := ratelua.Scripts()
	if len(scripts) == 0 {
		return fmt.Errorf("scripts: no embedded scripts (a broken build)")
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tSHA1\tLIMIT\tCOST")
	for _, s := range scripts {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", s.Name, s.Version, s.SHA1,
			strings.Join(s.Limit, " "), shortCost(s.Cost))
	}
	return tw.Flush()
}

// shortCost is the commands of a recorded decision, from the manifest's
// cost text ("HGET, HMGET, HSET, PEXPIRE per recorded decision ...").
func shortCost(cost string) string {
	if c, _, ok := strings.Cut(cost, " per recorded decision"); ok {
		return c
	}
	return cost
}

// manifestJSON returns lua/manifest.json as embedded in the ratelua
// package.
func manifestJSON() ([]byte, error) {
	raw := ratelua.Manifest()
	if len(raw) == 0 {
		return nil, fmt.Errorf("no embedded manifest (a broken build)")
	}
	return raw, nil
}
