package generate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ratelua/ratelua/internal/manifest"
)

// scriptsTableRow matches a row of lua/README.md's scripts table.
var scriptsTableRow = regexp.MustCompile("(?m)^\\| `[a-z_0-9]+` \\| [0-9]+ \\| `[a-z_0-9]+\\.v[0-9]+\\.lua` \\|.*\n")

// LuaReadme returns lua/README.md with the rows of its scripts table
// written from the first stage's manifest (scripts): the newest version of
// each script. The rest of the page, the wire contract, is written by
// hand (TestLuaReadme checks it against the manifest).
func LuaReadme(root string, scripts Output) (Output, error) {
	var out Output
	raw, err := os.ReadFile(filepath.Join(root, "lua", "README.md"))
	if err != nil {
		return out, fmt.Errorf("generate: %w", err)
	}
	var m manifest.Manifest
	if err := json.Unmarshal(scripts.Files["lua/manifest.json"], &m); err != nil {
		return out, fmt.Errorf("generate: lua/manifest.json: %w", err)
	}
	readme := string(raw)
	at := scriptsTableRow.FindStringIndex(readme)
	if at == nil {
		return out, fmt.Errorf("generate: lua/README.md: no scripts table to write (no row | `name` | version | `file` | ...)")
	}
	var rows strings.Builder
	for _, e := range NewestEntries(m) {
		fmt.Fprintf(&rows, "| `%s` | %d | `%s` | `%s` | `%s` | `%s` | %d |\n",
			e.Name, e.Version, e.File, e.SHA1, e.Function, e.Library, e.StateVersion)
	}
	page := readme[:at[0]] + rows.String() + scriptsTableRow.ReplaceAllString(readme[at[0]:], "")
	return out, out.add("lua/README.md", []byte(page))
}

// NewestEntries returns the newest version of each script in the manifest,
// in the manifest's order of names.
func NewestEntries(m manifest.Manifest) []manifest.Entry {
	var out []manifest.Entry
	at := map[string]int{}
	for _, e := range m.Scripts {
		i, ok := at[e.Name]
		if !ok {
			at[e.Name] = len(out)
			out = append(out, e)
		} else if e.Version > out[i].Version {
			out[i] = e
		}
	}
	return out
}
