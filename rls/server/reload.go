package server

import (
	"time"

	"github.com/ratelua/ratelua/rls/stats"
)

// Reload loads the configuration directory when its files changed (or
// force). A configuration that fails to load is logged and kept on the
// health endpoint; the last good one stays in use.
//
// Reloads run one at a time, so that the configuration in use is always
// the one of the files read last.
func (s *Server) Reload(force bool) error {
	s.reloading.Lock()
	defer s.reloading.Unlock()
	dir := s.settings.ConfigDir()
	loaded, err := s.loader.Load(force)
	if err == nil && loaded.Config == nil {
		return nil // unchanged
	}
	if err == nil {
		err = s.service.SetConfig(loaded.Config)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		// Counted once per failure: a directory that cannot be read
		// fails every poll with the same error (a set of files that
		// does not parse is not parsed again).
		if s.lastError == nil || s.lastError.Error() != err.Error() {
			s.stats.Count(stats.ConfigLoadError)
		}
		s.lastError, s.errorAt = err, time.Now()
		s.log.Error("configuration not loaded; the last good one stays in use", "dir", dir, "error", err)
		return err
	}
	s.stats.Count(stats.ConfigLoadSuccess)
	s.lastError, s.loadedAt = nil, time.Now()
	s.log.Info("configuration loaded", "dir", dir, "files", loaded.Files)
	return nil
}
