package rls

import (
	"strings"
	"testing"
)

// TestBadSettingsStopTheStart (issue 30, M2): RATELUA_FALLBACK=NaN or
// 0.0001 passed the start-up check, after which no configuration ever
// loaded (the error named "the SECOND window") and every request was
// Unavailable. Every setting a parser accepts but the service cannot use
// is refused by SettingsFromEnv, naming the variable and the value.
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
	} {
		_, err := SettingsFromEnv(func(name string) string {
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
		s, err := SettingsFromEnv(func(name string) string {
			if name == "RATELUA_FALLBACK" {
				return v
			}
			return ""
		})
		if err != nil {
			t.Errorf("RATELUA_FALLBACK=%s: %v", v, err)
			continue
		}
		if _, err := NewServer(s, offline{}, nil, nil); err != nil {
			t.Errorf("RATELUA_FALLBACK=%s: the server does not start: %v", v, err)
		}
	}
}
