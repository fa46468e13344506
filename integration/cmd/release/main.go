// Command release checks that the tree is ready to be released and,
// with -tag, creates the annotated tags of every released module at the
// commit checked. make release runs it (after make check-generated) from
// the integration module:
//
//	go run ./cmd/release -root .. -tag
//
// It checks, and reports every failure before exiting 1:
//   - the version: the newest heading of CHANGELOG.md ("## 0.1.0 (date)");
//   - every module found in the tree requires the tree's modules at that
//     version, with a replace to their folder, and a released module
//     requires no unreleased one (release.CheckVersions);
//   - gofmt: no file of the tree needs formatting;
//   - committed: git has no change that is not committed (-uncommitted
//     lifts this while preparing), so the tags point at what was checked;
//   - every module is tidy (go mod tidy -diff, resolving the tree's
//     modules at the release version from a proxy written from the tree,
//     as a module developed through a go.work needs) and vets clean
//     (go vet ./...);
//   - a user can install the release: the consumer build from that proxy,
//     with an empty module cache, and go install of every command
//     (-consumer=false leaves it to make test).
//
// Tagging (-tag) is idempotent: a tag that already names the commit
// checked is kept; one that names another commit is an error, and no tag
// is created.
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
	flag.BoolVar(&o.tag, "tag", false, "create the annotated tags once every check passed (needs every change committed)")
	flag.BoolVar(&o.sums, "sums", false, "only write the go.sum of each module developed through a go.work (go mod tidy with the tree's modules from a proxy made from HEAD), then stop")
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
	tag         bool // create the tags
	sums        bool // only write the go.sum of the go.work modules
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
	if o.tag && o.uncommitted {
		return fmt.Errorf("-tag with -uncommitted: the tags would not point at what was checked")
	}
	work, err := os.MkdirTemp("", "ratelua-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// With every change committed, the proxy holds what a public proxy
	// would make from the tags: the commit's files, none of the ignored
	// ones on disk. Else the files on disk (the committed check fails
	// unless -uncommitted).
	proxy := filepath.Join(work, "proxy")
	if committed(ctx, root) == nil {
		err = release.WriteProxyAt(proxy, mods, e, root, "HEAD")
	} else {
		err = release.WriteProxy(proxy, mods, e)
	}
	if err != nil {
		return err
	}
	tidyEnv, err := proxyEnv(ctx, proxy, mods[0].Path)
	if err != nil {
		return err
	}
	if o.sums {
		for _, m := range mods {
			if m.Work == nil {
				continue
			}
			if err := goIn(ctx, m.Dir, tidyEnv, "mod", "tidy"); err != nil {
				return err
			}
			fmt.Fprintf(out, "wrote %s/go.sum: the tree's modules at %s as HEAD holds them\n", m.Rel, e.Version)
		}
		return nil
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
			check{"tidy " + m.Rel, func() error { return goIn(ctx, m.Dir, tidyEnv, "mod", "tidy", "-diff") }},
			check{"vet " + m.Rel, func() error { return goIn(ctx, m.Dir, []string{"GOWORK=" + workOf(m)}, "vet", "./...") }})
	}
	if o.consumer {
		checks = append(checks, check{"consumer", func() error { return consume(ctx, out, work, mods, e, o.verbose) }})
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
	if !o.tag {
		fmt.Fprintf(out, "\nready for %s; the tags to create (none was created; make release creates them):\n", e.Version)
		for _, t := range tags {
			fmt.Fprintf(out, "  git tag %s\n", t)
		}
		return nil
	}
	if err := tagAll(ctx, root, tags, e.Version); err != nil {
		return err
	}
	fmt.Fprintf(out, "\ntagged %s at HEAD:", e.Version)
	for _, t := range tags {
		fmt.Fprintf(out, " %s", t)
	}
	fmt.Fprintf(out, "\nthen: git push origin %s\n", strings.Join(tags, " "))
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

// consume runs the consumer on the proxy in work/proxy, in work/consumer.
func consume(ctx context.Context, out io.Writer, work string, mods []release.Module, e release.Entry, verbose bool) error {
	dir := filepath.Join(work, "consumer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := release.Consumer{Proxy: filepath.Join(work, "proxy"), Work: dir, Modules: mods, Version: e.Version}
	if verbose {
		c.Log = out
	}
	return c.Run(ctx)
}

// workOf is the GOWORK of a go command run in m's folder: its own go.work,
// or none (a go.work further up, such as rls/go.work above rls/reference,
// does not list m).
func workOf(m release.Module) string {
	if m.Work == nil {
		return "off"
	}
	return filepath.Join(m.Dir, "go.work")
}
