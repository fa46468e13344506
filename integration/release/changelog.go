package release

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// Entry is a release recorded in CHANGELOG.md.
type Entry struct {
	// Version is the module version, e.g. "v0.1.0".
	Version string
	// Date is the release date.
	Date time.Time
}

// heading is a release heading: "## 0.1.0 (2026-11-25)".
var heading = regexp.MustCompile(`^## ([0-9]+\.[0-9]+\.[0-9]+) \(([0-9]{4}-[0-9]{2}-[0-9]{2})\)$`)

// ReadChangelog returns the newest release of the CHANGELOG.md at path.
func ReadChangelog(path string) (Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return Entry{}, fmt.Errorf("read the changelog: %w", err)
	}
	defer f.Close()
	e, err := Newest(f)
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

// Newest returns the first release heading of a changelog, the newest
// release: a line "## 0.1.0 (2026-11-25)". An "## Unreleased" heading
// above it is allowed; any other second-level heading before the first
// release is an error naming its line.
func Newest(r io.Reader) (Entry, error) {
	s := bufio.NewScanner(r)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimRight(s.Text(), " \t\r")
		if !strings.HasPrefix(line, "## ") {
			continue
		}
		if strings.EqualFold(line, "## Unreleased") {
			continue
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return Entry{}, fmt.Errorf("line %d: %q is not a release heading (want \"## 0.1.0 (2026-11-25)\" or \"## Unreleased\")", n, line)
		}
		date, err := time.Parse(time.DateOnly, m[2])
		if err != nil {
			return Entry{}, fmt.Errorf("line %d: release date %q: %w", n, m[2], err)
		}
		return Entry{Version: "v" + m[1], Date: date}, nil
	}
	if err := s.Err(); err != nil {
		return Entry{}, err
	}
	return Entry{}, fmt.Errorf("no release heading (want a line \"## 0.1.0 (2026-11-25)\")")
}
