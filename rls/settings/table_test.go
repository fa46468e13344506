package settings

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeListsEverySetting: rls/README.md's table of settings has one
// row per setting of Table, with its default and status, and
// no other.
func TestReadmeListsEverySetting(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 4 || !strings.HasPrefix(cells[0], "| `") {
			continue
		}
		name := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")
		if _, dup := rows[name]; dup {
			t.Errorf("README.md lists %s twice", name)
		}
		rows[name] = strings.Trim(cells[1], "`") + " " + cells[2]
	}
	for _, s := range Table() {
		want := s.Default + " " + string(s.Status)
		if got, ok := rows[s.Name]; !ok {
			t.Errorf("README.md does not list %s", s.Name)
		} else if got != want {
			t.Errorf("README.md lists %s as %q, the table says %q", s.Name, got, want)
		}
		delete(rows, s.Name)
	}
	for name := range rows {
		t.Errorf("README.md lists %s, which is not in the table", name)
	}
}
