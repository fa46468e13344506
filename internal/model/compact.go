package model

// Compact merges the two newest recorded events when they fall in the same
// bucket of every limit: no window can tell them apart, so every reply
// stays the same, and the events held are at most the distinct buckets of
// the longest window, however many calls were recorded.
func (m *SlidingWindow) Compact() {
	n := len(m.events)
	if n < 2 {
		return
	}
	older, newer := m.events[n-2], m.events[n-1]
	for _, l := range m.Limits {
		if floorDiv(older.t, l.Resolution) != floorDiv(newer.t, l.Resolution) {
			return
		}
	}
	m.events[n-2] = event{t: newer.t, n: older.n + newer.n}
	m.events = m.events[:n-1]
}

// Compact merges the two newest recorded events when they were recorded
// at the same time: every reply stays the same, and the events held are
// at most the distinct times in the widest window.
func (m *ZSetLog) Compact() {
	n := len(m.events)
	if n < 2 || m.events[n-2].t != m.events[n-1].t {
		return
	}
	m.events[n-2].n += m.events[n-1].n
	m.events = m.events[:n-1]
}
