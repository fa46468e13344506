package server

import (
	"context"
	"fmt"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/rls/service"
	"github.com/ratelua/ratelua/rls/settings"
)

// Check parses the configuration directory dir as a server of the
// settings s would load it, and returns every error, each naming its file
// and line: RUNTIME_IGNOREDOTFILES, MERGE_DOMAIN_CONFIG, and the
// limiters' settings (RATELUA_FALLBACK refuses a limit its share rounds
// down to 0).
func Check(dir string, s settings.Settings) (*config.Config, error) {
	c, err := config.Load(dir, s.RuntimeIgnoreDotFiles, config.ParseOptions{MergeDomains: s.MergeDomains})
	if err != nil {
		return nil, err
	}
	// The limits must also make limiters (bounds the parser checks too).
	svc, err := service.New(service.Options{Client: offline{}, DenyCache: s.DenyCache, LocalCache: s.LocalCacheEntries(), Fallback: s.Fallback, FailOpen: s.FailOpen})
	if err != nil {
		return nil, err
	}
	if err := svc.SetConfig(c); err != nil {
		return nil, err
	}
	return c, nil
}

// offline is a Client that never sends: check builds limiters with it.
type offline struct{}

// Run refuses every call.
func (offline) Run(context.Context, ratelua.Call, []int64) error {
	return fmt.Errorf("rls: check does not connect: %w", ratelua.ErrUnavailable)
}
