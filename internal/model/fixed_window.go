package model

// FixedWindow is the model of fixed_window: one integer counter per
// window, envoyproxy/ratelimit's, that every counting call adds its
// events to (INCRBY) and gives the TTL Expire seconds (EXPIRE). The
// window is named by the caller's key; the model is one key, so one
// window: Window places a call in it (retry_after and reset_after count
// to its end).
type FixedWindow struct {
	Max    int64 // events allowed in the window, 0..2^52
	Window int64 // the window's length in the unit
	Expire int64 // the counter's EXPIRE in seconds

	count  int64
	exists bool
	ttl    int64
}

// Exists reports whether the counter must exist.
func (m *FixedWindow) Exists() bool { return m.exists }

// TTLMillis is the counter's PTTL right after a write: Expire seconds.
func (m *FixedWindow) TTLMillis() int64 { return m.ttl }

// Count is the counter's value (0 when absent).
func (m *FixedWindow) Count() int64 { return m.count }

// Do applies c: a reset (Count < 0) deletes the counter; in mode 1 an
// event count above 0 is added whatever the answer; in mode 0 only when
// the count after it is at most Max; 0 decides whether one more event
// would pass and writes nothing.
func (m *FixedWindow) Do(c Call) Reply {
	if c.Count < 0 {
		m.count, m.exists, m.ttl = 0, false, 0
		return Reply{Allowed: 1, Remaining: m.Max}
	}
	left := m.Window - c.Now%m.Window
	held := m.count
	resetOf := func(n int64) int64 {
		if n > 0 {
			return left
		}
		return 0
	}
	retryOf := func() int64 {
		if c.Count > m.Max {
			return -1
		}
		return left
	}
	if c.Count == 0 {
		if held+1 <= m.Max {
			return Reply{Allowed: 1, Remaining: m.Max - held, ResetAfter: resetOf(held), LimitIndex: 1}
		}
		return Reply{Remaining: max(m.Max-held, 0), RetryAfter: left, ResetAfter: resetOf(held), LimitIndex: 1}
	}
	if c.Mode == 0 && held+c.Count > m.Max {
		return Reply{Remaining: max(m.Max-held, 0), RetryAfter: retryOf(), ResetAfter: resetOf(held), LimitIndex: 1}
	}
	m.count += c.Count
	m.exists = true
	m.ttl = m.Expire * 1000
	if m.count <= m.Max {
		return Reply{Allowed: 1, Remaining: m.Max - m.count, ResetAfter: left, LimitIndex: 1}
	}
	return Reply{RetryAfter: retryOf(), ResetAfter: resetOf(m.count), LimitIndex: 1}
}
