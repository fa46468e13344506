// Command release checks that the tree is ready to be released and
// prints the tags to create; it creates none. make release runs it (after
// make check-generated) from the integration module:
//
//	go run ./cmd/release -root ..
//
// It checks, and reports every failure before exiting 1:
//   - the version: the newest heading of CHANGELOG.md ("## 0.1.0 (date)");
//   - every module found in the tree requires the tree's modules at that
//     version, with a replace to their folder, and a released module
//     requires no unreleased one (release.CheckVersions);
//   - gofmt: no file of the tree needs formatting;
//   - committed: git has no change that is not committed (-uncommitted
//     lifts this while preparing), so the tags point at what was checked;
//   - every module is tidy (go mod tidy -diff) and vets clean (go vet ./...);
//   - a user can install the release: the consumer build from a proxy
//     written from the tree, with an empty module cache (-consumer=false
//     leaves it to make test).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ratelua/ratelua/integration/release"
)

func main() {
	root := flag.String("root", "..", "the repository's root folder")
	var o options
	flag.BoolVar(&o.consumer, "consumer", true, "also install the release from a proxy written from the tree, as a user would")
	flag.BoolVar(&o.uncommitted, "uncommitted", false, "do not fail on changes not committed (the tags would not point at what was checked)")
	flag.BoolVar(&o.verbose, "v", false, "print every command the consumer runs and its output")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *root, o); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	consumer    bool // run the consumer
	uncommitted bool // allow changes not committed
	verbose     bool // print the consumer's commands and output
}

// run checks the tree at root and prints the tags to create.
func run(ctx context.Context, out io.Writer, root string, o options) error {
	mods, err := release.Find(root)
	if err != nil {
		return err
	}
	e, err := release.ReadChangelog(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "release %s (%s), from CHANGELOG.md\n", e.Version, e.Date.Format(time.DateOnly))
	for _, m := range mods {
		state := "released"
		if !m.Released {
			state = "not released"
		}
		fmt.Fprintf(out, "  module %-40s %s\n", m.Path, state)
	}
	checks := []check{
		{"versions", func() error { return release.CheckVersions(mods, e.Version) }},
		{"gofmt", func() error { return gofmt(ctx, root) }},
	}
	if !o.uncommitted {
		checks = append(checks, check{"committed", func() error { return committed(ctx, root) }})
	}
	for _, m := range mods {
		checks = append(checks,
			check{"tidy " + m.Rel, func() error { return goIn(ctx, m.Dir, "mod", "tidy", "-diff") }},
			check{"vet " + m.Rel, func() error { return goIn(ctx, m.Dir, "vet", "./...") }})
	}
	if o.consumer {
		checks = append(checks, check{"consumer", func() error { return consume(ctx, out, mods, e, o.verbose) }})
	}
	var failed []string
	for _, c := range checks {
		start := time.Now()
		err := c.run()
		took := time.Since(start).Round(time.Millisecond)
		if err != nil {
			fmt.Fprintf(out, "FAIL %s (%s)\n%s\n", c.name, took, indent(err.Error()))
			failed = append(failed, c.name)
			continue
		}
		fmt.Fprintf(out, "ok   %s (%s)\n", c.name, took)
	}
	if len(failed) > 0 {
		return fmt.Errorf("the tree is not ready for %s: %s failed", e.Version, strings.Join(failed, ", "))
	}
	tags := release.Tags(mods, e.Version)
	fmt.Fprintf(out, "\nready for %s; the tags to create (none was created):\n", e.Version)
	for _, t := range tags {
		fmt.Fprintf(out, "  git tag %s\n", t)
	}
	fmt.Fprintf(out, "then: git push origin %s\n", strings.Join(tags, " "))
	return nil
}

// check is one readiness check.
type check struct {
	name string
	run  func() error
}

// indent indents every line of s for the report.
func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// consume writes the proxy in a temporary folder and runs the consumer.
func consume(ctx context.Context, out io.Writer, mods []release.Module, e release.Entry, verbose bool) error {
	work, err := os.MkdirTemp("", "ratelua-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	proxy := filepath.Join(work, "proxy")
	if err := release.WriteProxy(proxy, mods, e); err != nil {
		return err
	}
	c := release.Consumer{Proxy: proxy, Work: work, Modules: mods, Version: e.Version}
	if verbose {
		c.Log = out
	}
	return c.Run(ctx)
}
