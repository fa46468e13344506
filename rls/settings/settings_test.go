package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestStatisticsSettings (issue 33, statistics): statsd is on by default
// as in the reference (TCP to localhost:8125 every 10 s); two sinks at
// once are refused as the reference refuses them (USE_STATSD counts
// unless false); DISABLE_STATS turns every sink off; a bad EXTRA_TAGS,
// STATSD_PROTOCOL, mogrifier or mapping file stops the start, naming
// the variable.
func TestStatisticsSettings(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("mappings:\n  - match: ratelimit.service.rate_limit.*.*.total_hits\n    name: hits\n    labels: {domain: $1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("mappings:\n  - match: a.*\n    name: x\n    ttl: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(env map[string]string) (Settings, error) {
		return FromEnv(func(name string) string { return env[name] })
	}
	s, err := read(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Stats; !c.Statsd || c.StatsdHost != "localhost" || c.StatsdPort != 8125 || c.StatsdProtocol != "tcp" || c.FlushInterval != 10*time.Second || c.Disable || c.Prometheus || c.DogStatsd {
		t.Errorf("defaults: %+v, want statsd over TCP to localhost:8125 every 10s", c)
	}
	s, err = read(map[string]string{"USE_STATSD": "false", "USE_PROMETHEUS": "true", "PROMETHEUS_MAPPER_YAML": good, "EXTRA_TAGS": "a:1,b:x.y"})
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Stats; !c.Prometheus || c.Statsd || c.Mapper == nil || c.ExtraTags["b"] != "x.y" || c.PrometheusAddr != ":9090" || c.PrometheusPath != "/metrics" {
		t.Errorf("Prometheus: %+v", c)
	}
	s, err = read(map[string]string{"DISABLE_STATS": "true", "USE_PROMETHEUS": "true", "USE_DOG_STATSD": "true"})
	if err != nil || !s.Stats.Disable {
		t.Errorf("DISABLE_STATS with two sinks: %v, %+v; want accepted, disabled (as the reference)", err, s.Stats)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"USE_PROMETHEUS": "true"}, `USE_PROMETHEUS="true": unable to use more than one stats sink`},
		{map[string]string{"USE_DOG_STATSD": "true"}, `USE_DOG_STATSD="true": unable to use more than one stats sink`},
		{map[string]string{"USE_STATSD": "false", "USE_DOG_STATSD": "true", "USE_PROMETHEUS": "true"}, `USE_DOG_STATSD="true"`},
		{map[string]string{"EXTRA_TAGS": "novalue"}, `EXTRA_TAGS="novalue"`},
		{map[string]string{"STATSD_PROTOCOL": "sctp"}, `STATSD_PROTOCOL="sctp"`},
		{map[string]string{"STATSD_PORT": "70000"}, `STATSD_PORT="70000"`},
		{map[string]string{"STATS_FLUSH_INTERVAL": "0s"}, `STATS_FLUSH_INTERVAL="0s"`},
		{map[string]string{"USE_STATSD": "false", "USE_PROMETHEUS": "true", "PROMETHEUS_PATH": "metrics"}, `PROMETHEUS_PATH="metrics"`},
		{map[string]string{"USE_STATSD": "false", "USE_PROMETHEUS": "true", "PROMETHEUS_MAPPER_YAML": bad}, `PROMETHEUS_MAPPER_YAML=`},
		{map[string]string{"USE_STATSD": "false", "USE_PROMETHEUS": "true", "PROMETHEUS_MAPPER_YAML": filepath.Join(dir, "none.yaml")}, `PROMETHEUS_MAPPER_YAML=`},
		{map[string]string{"USE_STATSD": "false", "USE_DOG_STATSD": "true", "USE_DOG_STATSD_MOGRIFIERS": "X"}, `DOG_STATSD_MOGRIFIER_X_PATTERN`},
		{map[string]string{"USE_STATSD": "false", "USE_DOG_STATSD": "true", "USE_DOG_STATSD_MOGRIFIERS": "X",
			"DOG_STATSD_MOGRIFIER_X_PATTERN": "(", "DOG_STATSD_MOGRIFIER_X_NAME": "n"}, `DOG_STATSD_MOGRIFIER_X_PATTERN="("`},
	} {
		if _, err := read(c.env); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %s", c.env, err, c.want)
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
