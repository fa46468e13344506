// Command casereport prints the summary of the integration suites' case
// report (harness.ReportEnv): how many cases passed, failed and skipped
// per suite and server, so that a silent skip shows. make test runs it
// after the suites:
//
//	go run ./internal/cmd/casereport FILE
//
// A missing file prints that the suites did not report; a malformed line
// is an error naming it (exit status 1).
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ratelua/ratelua/integration/internal/harness"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: casereport FILE")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "casereport:", err)
		os.Exit(1)
	}
}

// run prints the summary of the report at path.
func run(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Println("integration cases: no report (the integration suites did not run)")
		return nil
	}
	if err != nil {
		return fmt.Errorf("open the case report: %w", err)
	}
	defer f.Close()
	cases, err := harness.ReadReport(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Printf("integration cases (%d), per suite and server:\n", len(cases))
	fmt.Print(harness.Summarize(cases))
	return nil
}
