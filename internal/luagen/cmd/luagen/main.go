// Command luagen writes or checks every generated file of the repository,
// from lua/src and from the code that answers for them (package
// internal/generate says which):
//
//	go run ./internal/luagen/cmd/luagen -write   # make generate (and go generate)
//	go run ./internal/luagen/cmd/luagen -check   # make check-generated (part of make test)
//
// -check writes nothing and fails naming each stale, missing or leftover
// file, with an excerpt of where a stale one first differs. -write writes
// only the files that differ and removes the leftovers. Run it from the
// module's root, or name the root with -C.
//
// It works in two stages: lua/ from lua/src, then everything made from
// lua/ through the Go API (the packages' copies, the key vectors, the
// READMEs' generated parts...). When -write changes lua/, this program
// embeds the old scripts, so it runs itself again with go run, built with
// the new ones, for the second stage.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/ratelua/ratelua/internal/generate"
)

// rebuiltEnv marks the run that -write started after writing lua/.
const rebuiltEnv = "RATELUA_LUAGEN_REBUILT"

// errStale is the failure of -check.
var errStale = errors.New("generated files are stale: run make generate (go run ./internal/luagen/cmd/luagen -write)")

func main() {
	write := flag.Bool("write", false, "write every generated file that differs, and remove leftovers")
	check := flag.Bool("check", false, "write nothing; fail naming every generated file that is stale")
	root := flag.String("C", ".", "the repository's root")
	flag.Parse()
	if *write == *check || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: luagen -write | -check [-C root]")
		os.Exit(2)
	}
	var err error
	if *write {
		err = runWrite(os.Stdout, *root)
	} else {
		err = runCheck(os.Stdout, *root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "luagen:", err)
		os.Exit(1)
	}
}

// runWrite writes the first stage, then the second, in this process when
// it embeds the first stage's scripts, else in one built again.
func runWrite(w io.Writer, root string) error {
	scripts, err := generate.Scripts(root)
	if err != nil {
		return err
	}
	if err := report(w, root, scripts); err != nil {
		return err
	}
	if !generate.Fresh(scripts) {
		if os.Getenv(rebuiltEnv) != "" {
			return fmt.Errorf("built again after writing lua/, this program still embeds other scripts than lua/src makes")
		}
		fmt.Fprintln(w, "luagen: lua/ changed: building again for the files made from it")
		cmd := exec.Command("go", "run", "./internal/luagen/cmd/luagen", "-write")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), rebuiltEnv+"=1")
		cmd.Stdout, cmd.Stderr = w, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("the second stage: %w", err)
		}
		return nil
	}
	derived, err := generate.Derived(root, scripts)
	if err != nil {
		return err
	}
	return report(w, root, derived)
}

// report writes out and names what it changed.
func report(w io.Writer, root string, out generate.Output) error {
	changed, err := generate.Write(root, out)
	for _, path := range changed {
		fmt.Fprintln(w, "luagen: wrote", filepath.ToSlash(path))
	}
	return err
}

// runCheck compares both stages with the files; the second only when the
// first is current (this program embeds lua/ as it is on disk, so a stale
// lua/ means the second stage cannot be made from lua/src).
func runCheck(w io.Writer, root string) error {
	scripts, err := generate.Scripts(root)
	if err != nil {
		return err
	}
	problems, err := generate.Check(root, scripts)
	if err != nil {
		return err
	}
	if generate.Fresh(scripts) {
		derived, err := generate.Derived(root, scripts)
		if err != nil {
			return err
		}
		more, err := generate.Check(root, derived)
		if err != nil {
			return err
		}
		problems = append(problems, more...)
	} else {
		defer fmt.Fprintln(w, "luagen: lua/ is stale, so the files made from it (the packages' copies, the key vectors, the READMEs' generated parts) were not checked")
	}
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d %w", len(problems), errStale)
	}
	fmt.Fprintln(w, "luagen: every generated file is current")
	return nil
}
