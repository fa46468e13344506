package release

import (
	"strings"
	"testing"
)

func TestNewestReadsTheFirstRelease(t *testing.T) {
	for _, tc := range []struct{ name, text, version, date string }{
		{"one", "# Changelog\n\n## 0.1.0 (2026-11-25)\n\n- first\n", "v0.1.0", "2026-11-25"},
		{"newest first", "# Changelog\n## 0.2.0 (2027-01-02)\n## 0.1.0 (2026-11-25)\n", "v0.2.0", "2027-01-02"},
		{"unreleased above", "## Unreleased\n- next\n\n## 1.2.3 (2027-03-04)\n", "v1.2.3", "2027-03-04"},
		{"third-level headings are content", "### Notes\n## 0.1.0 (2026-11-25)\n", "v0.1.0", "2026-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Newest(strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if e.Version != tc.version || e.Date.Format("2006-01-02") != tc.date {
				t.Errorf("Newest = %s %s, want %s %s", e.Version, e.Date.Format("2006-01-02"), tc.version, tc.date)
			}
		})
	}
}

func TestNewestRefusesWhatIsNotARelease(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no heading", "# Changelog\n", "no release heading"},
		{"no date", "# Changelog\n\n## 0.1.0\n", `line 3: "## 0.1.0" is not a release heading`},
		{"a v prefix", "## v0.1.0 (2026-11-25)\n", `line 1: "## v0.1.0 (2026-11-25)" is not a release heading`},
		{"an impossible date", "## 0.1.0 (2026-13-40)\n", `line 1: release date "2026-13-40"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Newest(strings.NewReader(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Newest = %v, want an error holding %q", err, tc.want)
			}
		})
	}
}
