package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/rls/stats"
	"github.com/ratelua/ratelua/rls/xds"
)

// ApplyXDS applies one update of the xDS server: its resources, as
// configuration files, replace the configuration in use at once, or,
// when they do not load, the error refuses the update (NACK), is logged
// and kept on the health endpoint, and the last good configuration stays
// in use.
func (s *Server) ApplyXDS(_ context.Context, u xds.Update) error {
	files := make([]config.File, len(u.Files))
	for i, f := range u.Files {
		files[i] = config.File{Name: f.Name, Data: f.Data}
	}
	c, err := config.Parse(files, config.ParseOptions{MergeDomains: s.settings.MergeDomains})
	if err == nil {
		err = s.service.SetConfig(c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.stats.Count(stats.ConfigLoadError)
		s.lastError, s.errorAt = err, time.Now()
		s.log.Error("xDS configuration refused; the last good one stays in use", "version", u.Version, "error", err)
		return err
	}
	s.stats.Count(stats.ConfigLoadSuccess)
	s.lastError, s.loadedAt = nil, time.Now()
	s.log.Info("xDS configuration loaded", "version", u.Version, "resources", len(u.Files))
	return nil
}

// startXDS subscribes to the xDS server of the settings until ctx is
// done, applying each update; unless FORCE_START_WITHOUT_INITIAL_CONFIG,
// it returns once the first update was applied or refused. stop ends the
// subscription and waits for it.
func (s *Server) startXDS(ctx context.Context) (stop func(), err error) {
	opts, err := s.settings.XDSOptions(s.log)
	if err != nil {
		return nil, fmt.Errorf("rls: the xDS client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	first := make(chan struct{})
	once := sync.Once{}
	apply := func(ctx context.Context, u xds.Update) error {
		defer once.Do(func() { close(first) })
		return s.ApplyXDS(ctx, u)
	}
	done := make(chan error, 1)
	go func() { done <- xds.Run(ctx, opts, apply) }()
	stop = func() { cancel(); <-done }
	if s.settings.ForceStart {
		return stop, nil
	}
	s.log.Info("waiting for the first configuration from the xDS server", "server", opts.ServerURL, "node", opts.NodeID)
	select {
	case <-first:
		return stop, nil
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	case err := <-done:
		cancel()
		if errors.Is(err, xds.ErrOptions) {
			return nil, fmt.Errorf("rls: the xDS client: %w", err)
		}
		return nil, err
	}
}
