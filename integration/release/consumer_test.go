package release

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The sample tree installs from its proxy with no other dependency, so
// this runs the whole consumer without the network in a few seconds.
func TestConsumerInstallsTheSampleRelease(t *testing.T) {
	_, mods := findSample(t, sample())
	work := t.TempDir()
	e := Entry{Version: "v0.1.0", Date: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	if err := WriteProxy(filepath.Join(work, "proxy"), mods, e); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	c := Consumer{Proxy: filepath.Join(work, "proxy"), Work: work, Modules: mods, Version: e.Version, Log: &log}
	if err := c.Run(context.Background()); err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	for _, want := range []string{
		"go get example.com/r/ad@v0.1.0",
		"go get example.com/r@v0.1.0 example.com/r/ad@v0.1.0",
		"go vet -trimpath .",
		"go install -trimpath example.com/r/cmd/tool@v0.1.0",
		"tool --help",
		"usage: tool",
		"consumer: 2 packages of ratelua v0.1.0",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
	if strings.Contains(log.String(), "example.com/r/tests") {
		t.Errorf("the consumer got the unreleased module:\n%s", log.String())
	}
}

// A module requiring a version the proxy lacks fails the consumer, naming
// the version, whether it is below the release (met by go get of that
// module alone) or above it.
func TestConsumerFailsOnASampleVersionTheProxyLacks(t *testing.T) {
	for _, missing := range []string{"v0.0.9", "v0.1.1"} {
		t.Run(missing, func(t *testing.T) {
			files := sample()
			files["ad/go.mod"] = strings.Replace(files["ad/go.mod"], "example.com/r v0.1.0", "example.com/r "+missing, 1)
			_, mods := findSample(t, files)
			work := t.TempDir()
			e := Entry{Version: "v0.1.0", Date: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
			if err := WriteProxy(filepath.Join(work, "proxy"), mods, e); err != nil {
				t.Fatal(err)
			}
			c := Consumer{Proxy: filepath.Join(work, "proxy"), Work: work, Modules: mods, Version: e.Version}
			err := c.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), "example.com/r@"+missing) {
				t.Errorf("Run = %v, want an error naming example.com/r@%s", err, missing)
			}
		})
	}
}
