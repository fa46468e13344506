package server

import (
	"testing"

	"github.com/ratelua/ratelua/rls/settings"
)

// TestGoodSettingsStart: every RATELUA_FALLBACK share settings.FromEnv
// accepts makes a server (the limiters of the reference rules take it);
// settings.TestBadSettingsStopTheStart checks the shares it refuses.
func TestGoodSettingsStart(t *testing.T) {
	for _, v := range []string{"0", "0.001", "0.5", "1"} {
		s, err := settings.FromEnv(func(name string) string {
			if name == "RATELUA_FALLBACK" {
				return v
			}
			return ""
		})
		if err != nil {
			t.Fatalf("RATELUA_FALLBACK=%s: %v", v, err)
		}
		if _, err := New(s, offline{}, nil, nil); err != nil {
			t.Errorf("RATELUA_FALLBACK=%s: the server does not start: %v", v, err)
		}
	}
}
