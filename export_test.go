package ratelua

// DenyCacheLen is how many event keys l's deny cache holds, for the
// bounds tests of package ratelua_test.
func DenyCacheLen(l *Limiter) int { return l.deny.keys.Len() }

// FallbackLen is how many event keys l's fallback holds.
func FallbackLen(l *Limiter) int { return l.fallback.len() }
