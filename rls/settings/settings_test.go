package settings

import (
	"strings"
	"testing"
)

// TestBadSettingsStopTheStart (issue 30, M2): RATELUA_FALLBACK=NaN or
// 0.0001 passed the start-up check, after which no configuration ever
// loaded (the error named "the SECOND window") and every request was
// Unavailable. Every setting a parser accepts but the service cannot use
// is refused by FromEnv, naming the variable and the value; the shares
// the service takes are accepted (server.TestGoodSettingsStart starts a
// server with each).
func TestBadSettingsStopTheStart(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"RATELUA_FALLBACK", "NaN"},
		{"RATELUA_FALLBACK", "0.0001"},
		{"RATELUA_FALLBACK", "-0.5"},
		{"RATELUA_FALLBACK", "1.5"},
		{"RATELUA_FALLBACK", "Inf"},
		{"NEAR_LIMIT_RATIO", "NaN"},
		{"NEAR_LIMIT_RATIO", "0"},
		{"NEAR_LIMIT_RATIO", "1.2"},
		{"RATELUA_DENY_CACHE", "-1"},
		{"PORT", "70000"},
		{"GRPC_PORT", "-1"},
		{"RATELUA_RELOAD_INTERVAL", "0s"},
		{"RATELUA_REQUEST_TIMEOUT", "0s"},
		{"RATELUA_MAX_DESCRIPTORS", "0"},
		{"RATELUA_FAIL_OPEN", "maybe"},
		{"RATELUA_SHARE_REFERENCE_COUNTERS", "maybe"},
	} {
		_, err := FromEnv(func(name string) string {
			if name == c.name {
				return c.value
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), c.name+"=\""+c.value+"\"") {
			t.Errorf("%s=%s: error %v, want one naming the variable and its value", c.name, c.value, err)
		}
	}
	for _, v := range []string{"0", "0.001", "0.5", "1"} {
		if _, err := FromEnv(func(name string) string {
			if name == "RATELUA_FALLBACK" {
				return v
			}
			return ""
		}); err != nil {
			t.Errorf("RATELUA_FALLBACK=%s: %v", v, err)
		}
	}
}

// TestShareReferenceCountersIsOnByDefault: unset, reference rules share
// envoyproxy/ratelimit's counters; false turns it off; the prefix of the
// reference's keys is CACHE_KEY_PREFIX as given.
func TestShareReferenceCountersIsOnByDefault(t *testing.T) {
	for _, c := range []struct {
		value string
		want  bool
	}{{"", true}, {"true", true}, {"false", false}} {
		s, err := FromEnv(func(name string) string {
			switch name {
			case "RATELUA_SHARE_REFERENCE_COUNTERS":
				return c.value
			case "CACHE_KEY_PREFIX":
				return "pfx_"
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		if s.ShareCounters != c.want || s.CacheKeyPrefix != "pfx_" {
			t.Errorf("RATELUA_SHARE_REFERENCE_COUNTERS=%q: shared %v, prefix %q; want %v, pfx_", c.value, s.ShareCounters, s.CacheKeyPrefix, c.want)
		}
	}
}

// TestStatsdDefaultIsLoggedNotRefused: USE_STATSD is true by default in the
// reference; unset, the start goes on and says so once (Settings.Unused);
// set false, nothing is said; set true, the start stops.
func TestStatsdDefaultIsLoggedNotRefused(t *testing.T) {
	for _, c := range []struct {
		value  string
		logged bool
		err    bool
	}{{"", true, false}, {"false", false, false}, {"true", false, true}} {
		s, err := FromEnv(func(name string) string {
			if name == "USE_STATSD" {
				return c.value
			}
			return ""
		})
		if (err != nil) != c.err || err != nil && !strings.Contains(err.Error(), `USE_STATSD="true"`) {
			t.Errorf("USE_STATSD=%q: error %v, want error %v naming it", c.value, err, c.err)
			continue
		}
		logged := false
		for _, u := range s.Unused {
			logged = logged || u.Name == "USE_STATSD"
		}
		if err == nil && logged != c.logged {
			t.Errorf("USE_STATSD=%q: logged %v, want %v", c.value, logged, c.logged)
		}
	}
}

// TestEverySettingIsReadFromTheTable: every name FromEnv asks for
// is in Table (its default is there), no name is listed twice,
// and with no variable set FromEnv succeeds, which it does only
// when every Implemented or Own setting was read into Settings (none is
// listed as implemented and ignored).
func TestEverySettingIsReadFromTheTable(t *testing.T) {
	table := map[string]Setting{}
	for _, s := range Table() {
		if _, dup := table[s.Name]; dup {
			t.Errorf("%s twice in the table", s.Name)
		}
		table[s.Name] = s
	}
	asked := map[string]bool{}
	if _, err := FromEnv(func(name string) string { asked[name] = true; return "" }); err != nil {
		t.Fatal(err)
	}
	for name := range asked {
		if _, ok := table[name]; !ok {
			t.Errorf("%s is read but not in the table", name)
		}
	}
}
