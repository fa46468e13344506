package ratelua_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/manifest"
)

// TestLuaReadme checks lua/README.md against lua/manifest.json, so that the
// wire contract a caller in another language reads cannot drift from the
// scripts: the README documents the newest version of each script in the
// manifest (name, version, file, SHA1, function, library, state version,
// every argument and limit argument with its bounds, every reply field in
// order) and names no script file, SHA1, function or library the manifest
// does not hold at that version.
//
// The scripts table is written by make generate (internal/generate); the
// rest of the page is written by hand.
func TestLuaReadme(t *testing.T) {
	readme, m := readLuaReadme(t)
	for _, problem := range checkLuaReadme(readme, m) {
		t.Error("lua/README.md: " + problem)
	}
}

// TestLuaReadmeCheckFails shows that the check can fail: each change to the
// README or the manifest below must be reported.
func TestLuaReadmeCheckFails(t *testing.T) {
	readme, m := readLuaReadme(t)
	newest := newestEntries(m)
	if len(newest) == 0 {
		t.Fatal("the manifest holds no script")
	}
	first := newest[0]
	fakeSHA1 := strings.Repeat("0", 40)
	for name, change := range map[string]func(string, manifest.Manifest) (string, manifest.Manifest){
		"a SHA1 changed in the README": func(r string, m manifest.Manifest) (string, manifest.Manifest) {
			return strings.ReplaceAll(r, first.SHA1, fakeSHA1), m
		},
		"a file the manifest lacks": func(r string, m manifest.Manifest) (string, manifest.Manifest) {
			return r + "\nSee `" + first.Name + ".v999.lua`.\n", m
		},
		"a function the manifest lacks": func(r string, m manifest.Manifest) (string, manifest.Manifest) {
			return r + "\nFCALL `ratelua_nothing_v5`.\n", m
		},
		"a reply field renamed": func(r string, m manifest.Manifest) (string, manifest.Manifest) {
			return strings.Replace(r, "| `remaining` |", "| `left` |", 1), m
		},
		"a limit argument's bound changed": func(r string, m manifest.Manifest) (string, manifest.Manifest) {
			return strings.Replace(r, "`1..10^9`", "`1..10^8`", 1), m
		},
		"an argument row dropped": func(r string, m manifest.Manifest) (string, manifest.Manifest) {
			return regexp.MustCompile("(?m)^\\| `ARGV\\[3\\]` .*\n").ReplaceAllString(r, ""), m
		},
		"a newer version in the manifest": func(r string, m manifest.Manifest) (string, manifest.Manifest) {
			next := first
			next.Version++
			next.SHA1 = fakeSHA1
			next.File = first.Name + ".v" + strconv.Itoa(next.Version) + ".lua"
			next.Function = manifest.FunctionName(first.Name, next.Version)
			m.Scripts = append(slices.Clone(m.Scripts), next)
			return r, m
		},
		"a reply field added to the manifest": func(r string, m manifest.Manifest) (string, manifest.Manifest) {
			scripts := slices.Clone(m.Scripts)
			for i := range scripts {
				scripts[i].Reply = append(slices.Clone(scripts[i].Reply), "wait_more: a field no script sends")
			}
			m.Scripts = scripts
			return r, m
		},
	} {
		r, changed := change(readme, m)
		problems := checkLuaReadme(r, changed)
		if len(problems) == 0 {
			t.Errorf("%s: the check found nothing", name)
			continue
		}
		t.Logf("%s: %s", name, strings.Join(problems, "; "))
	}
}

func readLuaReadme(t *testing.T) (string, manifest.Manifest) {
	t.Helper()
	readme, err := os.ReadFile("lua/README.md")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("lua/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m manifest.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("lua/manifest.json: %v", err)
	}
	return string(readme), m
}

// newestEntries returns the newest version of each script in the manifest,
// in the manifest's order of names.
func newestEntries(m manifest.Manifest) []manifest.Entry {
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

// A readmeTable is a Markdown table: its header cells and its rows' cells,
// each cell trimmed.
type readmeTable struct {
	header []string
	rows   [][]string
}

// readmeTables returns the Markdown tables of a page.
func readmeTables(page string) []readmeTable {
	var out []readmeTable
	var cur *readmeTable
	for _, line := range strings.Split(page, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			cur = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case cur == nil:
			out = append(out, readmeTable{header: cells})
			cur = &out[len(out)-1]
		case strings.Trim(line, "|-: ") == "":
			// the delimiter row
		default:
			cur.rows = append(cur.rows, cells)
		}
	}
	return out
}

// tableWith returns the rows of the one table whose header is exactly
// header, or a problem.
func tableWith(tables []readmeTable, header ...string) ([][]string, string) {
	var found [][][]string
	for _, t := range tables {
		if slices.Equal(t.header, header) {
			found = append(found, t.rows)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Sprintf("want one table with the header | %s |, found %d", strings.Join(header, " | "), len(found))
	}
	return found[0], ""
}

// code returns s in backticks, as the README writes names.
func code(s string) string { return "`" + s + "`" }

var (
	// argumentToken is the KEYS[i] or ARGV[i] (ARGV[i..]) that starts a
	// manifest argument, and the name after it when it has one.
	argumentToken = regexp.MustCompile(`^((?:KEYS|ARGV)\[\d+(?:\.\.)?\])(?: ([A-Za-z]\w*)[,:])?`)
	// bounds are the ranges and limits a manifest text states:
	// [-2^52, 2^52], 1..10^9, <= 10000, 1 to 16.
	bounds        = regexp.MustCompile(`\[-?[\w^]+, -?[\w^]+\]|\b\d+\.\.[\w^]+|<= [\w^]+|\b\d+ to \d+\b`)
	sha1Text      = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	scriptFile    = regexp.MustCompile(`\b[a-z][a-z0-9_]*\.v\d+\.lua\b`)
	libraryFile   = regexp.MustCompile(`\bratelua_v\d+\.library\.lua\b`)
	functionName  = regexp.MustCompile(`\bratelua_[a-z][a-z0-9_]*_v\d+\b`)
	errorPrefixes = regexp.MustCompile(`'(ERR [^'.]+)`)
)

// checkLuaReadme returns every way the README and the newest version of
// each script in the manifest disagree.
func checkLuaReadme(readme string, m manifest.Manifest) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	newest := newestEntries(m)
	tables := readmeTables(readme)

	// The scripts: one row per script, exactly the manifest's newest entry.
	rows, problem := tableWith(tables, "script", "version", "file", "SHA1", "function", "library", "state version")
	if problem != "" {
		add("%s", problem)
	}
	seen := map[string]bool{}
	for _, row := range rows {
		if len(row) != 7 {
			add("scripts table: row %q has %d cells, want 7", row, len(row))
			continue
		}
		i := slices.IndexFunc(newest, func(e manifest.Entry) bool { return code(e.Name) == row[0] })
		if i < 0 {
			add("scripts table names %s, which the manifest lacks", row[0])
			continue
		}
		e := newest[i]
		seen[e.Name] = true
		want := []string{code(e.Name), strconv.Itoa(e.Version), code(e.File), code(e.SHA1), code(e.Function), code(e.Library), strconv.Itoa(e.StateVersion)}
		if !slices.Equal(row, want) {
			add("scripts table: row %q, want the manifest's newest %s: %q", row, e.Name, want)
		}
	}
	for _, e := range newest {
		if !seen[e.Name] {
			add("scripts table has no row for %s v%d", e.Name, e.Version)
		}
	}

	// The arguments every script takes: each KEYS[i] and ARGV[i], with its
	// name and the bounds the manifest states.
	rows, problem = tableWith(tables, "argument", "name", "meaning")
	if problem != "" {
		add("%s", problem)
	}
	arguments := map[string][]string{}
	for _, row := range rows {
		if len(row) != 3 {
			add("arguments table: row %q has %d cells, want 3", row, len(row))
			continue
		}
		arguments[row[0]] = row
	}
	documented := map[string]bool{}
	for _, e := range newest {
		for _, text := range append(slices.Clone(e.Keys), e.Argv...) {
			match := argumentToken.FindStringSubmatch(text)
			if match == nil {
				continue // a limit argument or a rule on every integer
			}
			token, name := code(match[1]), match[2]
			documented[token] = true
			row, ok := arguments[token]
			if !ok {
				add("arguments table has no row for %s (%s)", token, e.Name)
				continue
			}
			if name != "" && row[1] != code(name) {
				add("arguments table: %s is named %s, the manifest (%s) names it %s", token, row[1], e.Name, code(name))
			}
			for _, b := range bounds.FindAllString(text[len(match[0]):], -1) {
				if !strings.Contains(row[2], b) {
					add("arguments table: %s does not state %q, as the manifest (%s) does", token, b, e.Name)
				}
			}
		}
	}
	for token := range arguments {
		if !documented[token] {
			add("arguments table names %s, which the manifest lacks", token)
		}
	}

	// Each script's limit arguments, in order, with their bounds.
	rows, problem = tableWith(tables, "script", "argument", "meaning")
	if problem != "" {
		add("%s", problem)
	}
	limits := map[string][][]string{}
	for _, row := range rows {
		if len(row) != 3 {
			add("limits table: row %q has %d cells, want 3", row, len(row))
			continue
		}
		limits[row[0]] = append(limits[row[0]], row)
	}
	for _, e := range newest {
		got := limits[code(e.Name)]
		delete(limits, code(e.Name))
		var names []string
		for _, row := range got {
			names = append(names, row[1])
		}
		var want []string
		for _, arg := range e.Limit {
			want = append(want, code(arg))
		}
		if !slices.Equal(names, want) {
			add("limits table: %s's arguments are %v, the manifest's %v", e.Name, names, want)
			continue
		}
		for i, arg := range e.Limit {
			for _, text := range e.Argv {
				if rest, ok := strings.CutPrefix(text, arg+": "); ok {
					for _, b := range bounds.FindAllString(rest, -1) {
						if !strings.Contains(got[i][2], b) {
							add("limits table: %s's %s does not state %q, as the manifest does", e.Name, arg, b)
						}
					}
				}
			}
		}
	}
	for name := range limits {
		add("limits table names %s, which the manifest lacks", name)
	}

	// The reply: every field, in order.
	rows, problem = tableWith(tables, "index", "field", "meaning")
	if problem != "" {
		add("%s", problem)
	}
	var fields []string
	for i, row := range rows {
		if len(row) != 3 || row[0] != strconv.Itoa(i+1) {
			add("reply table: row %q, want index %d and three cells", row, i+1)
			continue
		}
		fields = append(fields, row[1])
	}
	for _, e := range newest {
		var want []string
		for _, r := range e.Reply {
			name, _, _ := strings.Cut(r, ":")
			want = append(want, code(name))
		}
		if !slices.Equal(fields, want) {
			add("reply table: fields %v, the manifest's %s replies %v", fields, e.Name, want)
		}
	}

	// The error prefix the manifest promises.
	for _, prefix := range errorPrefixes.FindAllStringSubmatch(m.Comment, -1) {
		if !strings.Contains(readme, prefix[1]) {
			add("does not name the error prefix %q of the manifest", prefix[1])
		}
	}

	// Nothing the manifest lacks: every SHA1, file, library and function
	// named anywhere on the page is one of a newest entry.
	known := map[string]bool{}
	for _, e := range newest {
		for _, s := range []string{e.SHA1, e.File, e.Function, e.Library} {
			known[s] = true
		}
	}
	for _, re := range []*regexp.Regexp{sha1Text, scriptFile, libraryFile, functionName} {
		for _, s := range re.FindAllString(readme, -1) {
			if !known[s] {
				add("names %s, which is not in the manifest's newest versions", s)
				known[s] = true // once
			}
		}
	}
	return problems
}
