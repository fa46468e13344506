package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/rls/settings"
	"github.com/ratelua/ratelua/rls/xds"
)

// TestApplyXDSKeepsTheLastGoodConfig: an xDS update whose documents load
// replaces the configuration in use; one that does not (a domain twice)
// is refused with the loader's error, shown on the health endpoint, and
// the last good configuration stays in use; MERGE_DOMAIN_CONFIG merges the
// documents of one domain, as it merges files.
func TestApplyXDSKeepsTheLastGoodConfig(t *testing.T) {
	doc := func(domain, key string) xds.File {
		return xds.File{Name: domain + "-" + key, Data: []byte("domain: " + domain + "\ndescriptors:\n  - key: " + key + "\n    rate_limit: {unit: MINUTE, requests_per_unit: 1}\n")}
	}
	srv, err := New(settings.Settings{NearLimitRatio: 0.8, ConfigType: settings.ConfigXDS}, offline{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := srv.ApplyXDS(ctx, xds.Update{Version: "1", Files: []xds.File{doc("a", "k"), doc("b", "k")}}); err != nil {
		t.Fatal(err)
	}
	good := srv.Service().Config()
	if good == nil || len(good.Rules) != 2 {
		t.Fatalf("config %+v, want 2 rules", good)
	}
	err = srv.ApplyXDS(ctx, xds.Update{Version: "2", Files: []xds.File{doc("a", "k"), doc("a", "j")}})
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "a-j:1: duplicate domain 'a'") {
		t.Fatalf("a domain twice: %v, want the loader's error naming the document and line", err)
	}
	if srv.Service().Config() != good {
		t.Fatal("the last good configuration was dropped")
	}
	if h := srv.Health(); !strings.Contains(h.LastError, "duplicate domain") || !h.ConfigUsed {
		t.Errorf("health %+v, want the error shown and a configuration in use", h)
	}
	if err := srv.ApplyXDS(ctx, xds.Update{Version: "3", Files: []xds.File{doc("c", "k")}}); err != nil {
		t.Fatal(err)
	}
	if c := srv.Service().Config(); c == good || len(c.Rules) != 1 || srv.Health().LastError != "" {
		t.Errorf("config %+v, health %+v: want the new rule, the error cleared", c, srv.Health())
	}

	merging, err := New(settings.Settings{NearLimitRatio: 0.8, ConfigType: settings.ConfigXDS, MergeDomains: true}, offline{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := merging.ApplyXDS(ctx, xds.Update{Version: "1", Files: []xds.File{doc("a", "k"), doc("a", "j")}}); err != nil {
		t.Fatalf("MERGE_DOMAIN_CONFIG: %v", err)
	}
	if c := merging.Service().Config(); len(c.Rules) != 2 {
		t.Errorf("merged config %+v, want 2 rules", c)
	}
}
