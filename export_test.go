package ratelua

// DenyCacheLen is how many event keys l's deny cache holds, for the
// bounds tests of package ratelua_test.
func DenyCacheLen(l *Limiter) int { return l.deny.keys.Len() }

// FallbackLen is how many event keys l's fallback holds.
func FallbackLen(l *Limiter) int { return l.fallback.len() }

// WaitUnknownReleases waits until c's background releases of acquires
// whose outcome was unknown have ended.
func WaitUnknownReleases(c *Semaphore) { c.releases.Wait() }
