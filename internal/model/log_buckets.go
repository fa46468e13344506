package model

// logBucketsPerWindow is how many buckets a LogBuckets limit's window
// spans.
const logBucketsPerWindow = 64

// LogBuckets is zset_log as the fallback keeps it in memory: each limit
// counts its events in buckets of ceil(Window/64), so a decision costs
// the same however many events the window holds, and the state of a
// limit is at most 66 buckets.
//
// A bucket is counted while any instant of it is in the window, so every
// count is the exact log's (ZSetLog, on the same recorded events) with
// the window lengthened by less than one bucket: it never admits what
// ZSetLog would deny, Remaining is at most ZSetLog's, and RetryAfter and
// ResetAfter are at most one bucket longer. With windows of at most 64
// units a bucket is one unit, and it answers as ZSetLog does.
type LogBuckets struct {
	Limits []ZSetLogLimit
	rings  [][]logBucket // per limit, in ascending bucket order
	sums   []int64       // per limit, the events in its ring
	exists bool
	last   int64 // time of the last recorded events
	ttl    int64
}

// logBucket is n events recorded in bucket index.
type logBucket struct {
	index, n int64
}

// Exists reports whether state must exist.
func (m *LogBuckets) Exists() bool { return m.exists }

// TTLMillis is the TTL of the last write.
func (m *LogBuckets) TTLMillis() int64 { return m.ttl }

// bucketWidth is the width of limit l's buckets.
func bucketWidth(l ZSetLogLimit) int64 {
	return ceilDiv(l.Window, logBucketsPerWindow)
}

// bucketEnd is the last instant of bucket index of width w.
func bucketEnd(index, w int64) int64 { return index*w + w - 1 }

// count returns the events limit i counts at stamp: every bucket with an
// instant after stamp - Window.
func (m *LogBuckets) count(i int, stamp int64) int64 {
	l, w := m.Limits[i], bucketWidth(m.Limits[i])
	n := m.sums[i]
	for _, b := range m.rings[i] {
		if bucketEnd(b.index, w) > stamp-l.Window {
			break
		}
		n -= b.n
	}
	return n
}

// add records n events at t, not before the last write, in every limit,
// and drops the buckets no window can count again.
func (m *LogBuckets) add(t, n int64) {
	for i, l := range m.Limits {
		w := bucketWidth(l)
		index := floorDiv(t, w)
		ring := m.rings[i]
		if k := len(ring); k > 0 && ring[k-1].index == index {
			ring[k-1].n += n
		} else {
			ring = append(ring, logBucket{index, n})
		}
		m.sums[i] += n
		drop := 0
		for drop < len(ring) && bucketEnd(ring[drop].index, w) <= t-l.Window {
			m.sums[i] -= ring[drop].n
			drop++
		}
		m.rings[i] = ring[drop:]
	}
}

// Do applies one call.
func (m *LogBuckets) Do(c Call) Reply {
	if c.Count < 0 {
		m.rings, m.sums, m.exists = nil, nil, false
		maxima := make([]int64, len(m.Limits))
		for i, l := range m.Limits {
			maxima[i] = l.Max
		}
		return fresh(maxima)
	}
	if m.rings == nil {
		m.rings, m.sums = make([][]logBucket, len(m.Limits)), make([]int64, len(m.Limits))
	}
	stamp := c.Now
	if m.exists {
		stamp = max(stamp, m.last)
	}
	asked := max(c.Count, 1)
	allowed := true
	for i, l := range m.Limits {
		if m.count(i, stamp)+asked > l.Max {
			allowed = false
		}
	}
	record := c.Count > 0 && (allowed || c.Mode == 1)
	if record {
		m.add(stamp, c.Count)
		m.exists, m.last = true, stamp
	}
	outcomes := make([]outcome, len(m.Limits))
	var resetAfter int64
	for i, l := range m.Limits {
		w := bucketWidth(l)
		window := m.count(i, stamp)
		o := &outcomes[i]
		o.remaining = max(0, l.Max-window)
		if asked > l.Max {
			o.retry = -1
		} else if !allowed && window+asked > l.Max {
			// The bucket holding the (Max - asked + 1)-th newest event
			// must leave the window.
			need := l.Max - asked + 1
			ring := m.rings[i]
			for j := len(ring) - 1; j >= 0; j-- {
				need -= ring[j].n
				if need <= 0 {
					o.retry = clampDuration(bucketEnd(ring[j].index, w) + l.Window - c.Now)
					break
				}
			}
		}
		if window > 0 {
			o.reset = clampDuration(bucketEnd(floorDiv(m.last, w), w) + l.Window - c.Now)
		}
		resetAfter = max(resetAfter, o.reset)
	}
	if record {
		m.ttl = ttlMillis(c.Unit, resetAfter)
	}
	return decide(allowed, outcomes)
}

// Usage reads the state: the events of the fullest limit's buckets, as if
// recorded at the last write. It reports false when nothing is held.
func (m *LogBuckets) Usage() (Usage, bool) {
	var events, horizon int64
	for i, l := range m.Limits {
		if m.sums != nil {
			events = max(events, m.sums[i])
		}
		horizon = max(horizon, l.Window+bucketWidth(l))
	}
	if !m.exists || events <= 0 {
		return Usage{}, false
	}
	return Usage{At: m.last, Events: events, Until: min(m.last+horizon, MaxTime)}, true
}
