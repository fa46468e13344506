package statsink

import (
	"context"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Sink receives what a Store flushes. A sink is called from one goroutine
// at a time for counters and gauges (the flush) and from any goroutine for
// timers.
type Sink interface {
	// FlushCounter sends a counter's increase since the last flush.
	FlushCounter(name string, delta uint64)
	// FlushGauge sends a gauge's value (every flush).
	FlushGauge(name string, value uint64)
	// FlushTimer sends one timer value (milliseconds).
	FlushTimer(name string, ms float64)
	// Flush ends a flush: a network sink sends what it holds.
	Flush()
	// Close sends what is left and releases the sink's resources.
	Close() error
}

// Counter is a counter of a Store: it only grows. A nil *Counter counts
// nothing.
type Counter struct {
	value, sent atomic.Uint64
}

// Add adds n to the counter.
func (c *Counter) Add(n uint64) {
	if c != nil && n != 0 {
		c.value.Add(n)
	}
}

// Inc adds 1 to the counter.
func (c *Counter) Inc() { c.Add(1) }

// Set sets the counter's total (a total kept elsewhere, such as the Go
// runtime's): the next flush sends its increase.
func (c *Counter) Set(v uint64) {
	if c != nil {
		c.value.Store(v)
	}
}

// Gauge is a value sent at every flush. A nil *Gauge keeps nothing.
type Gauge struct{ value atomic.Uint64 }

// Set sets the gauge.
func (g *Gauge) Set(v uint64) {
	if g != nil {
		g.value.Store(v)
	}
}

// Value is the counter's total.
func (c *Counter) Value() uint64 {
	if c == nil {
		return 0
	}
	return c.value.Load()
}

// latch returns the increase since the last latch.
func (c *Counter) latch() uint64 {
	v := c.value.Load()
	return v - c.sent.Swap(v)
}

// Timer sends each value it is given to the store's sink.
type Timer struct {
	name string
	sink Sink
}

// Add sends d, in whole milliseconds as the reference records its
// response times.
func (t *Timer) Add(d time.Duration) {
	if t != nil {
		t.sink.FlushTimer(t.name, float64(d.Milliseconds()))
	}
}

// Store holds a service's counters by name and flushes their increases to
// its sink. A nil *Store (DISABLE_STATS) hands out nil counters and
// timers, which count nothing.
type Store struct {
	sink     Sink
	tags     string // the serialized tags that end every name
	counters sync.Map
	gauges   sync.Map
	mu       sync.Mutex // one flush at a time
	closed   bool
	gens     []func() // run at the start of each flush (under mu)
}

// NewStore returns a store flushing to sink, whose every name ends with
// tags (EXTRA_TAGS) serialized as gostats does.
func NewStore(sink Sink, tags map[string]string) *Store {
	return &Store{sink: sink, tags: serializeTags(tags)}
}

// Counter returns the counter of name (the same one for every call with
// name).
func (s *Store) Counter(name string) *Counter {
	if s == nil {
		return nil
	}
	name += s.tags
	if v, ok := s.counters.Load(name); ok {
		return v.(*Counter)
	}
	v, _ := s.counters.LoadOrStore(name, new(Counter))
	return v.(*Counter)
}

// Gauge returns the gauge of name.
func (s *Store) Gauge(name string) *Gauge {
	if s == nil {
		return nil
	}
	name += s.tags
	if v, ok := s.gauges.Load(name); ok {
		return v.(*Gauge)
	}
	v, _ := s.gauges.LoadOrStore(name, new(Gauge))
	return v.(*Gauge)
}

// AddGenerator runs gen at the start of every flush, to set counters and
// gauges from elsewhere (the Go runtime's statistics).
func (s *Store) AddGenerator(gen func()) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gens = append(s.gens, gen)
}

// Timer returns the timer of name.
func (s *Store) Timer(name string) *Timer {
	if s == nil {
		return nil
	}
	return &Timer{name: name + s.tags, sink: s.sink}
}

// Flush runs the generators, sends every counter's increase since the
// last flush (when not zero) and every gauge to the sink, and ends the
// flush.
func (s *Store) Flush() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, g := range s.gens {
		g()
	}
	s.counters.Range(func(k, v any) bool {
		if d := v.(*Counter).latch(); d != 0 {
			s.sink.FlushCounter(k.(string), d)
		}
		return true
	})
	s.gauges.Range(func(k, v any) bool {
		s.sink.FlushGauge(k.(string), v.(*Gauge).value.Load())
		return true
	})
	s.sink.Flush()
}

// Run flushes every interval until ctx is done. Close flushes a last time.
func (s *Store) Run(ctx context.Context, interval time.Duration) {
	if s == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Flush()
		}
	}
}

// Close flushes a last time and closes the sink.
func (s *Store) Close() error {
	if s == nil {
		return nil
	}
	s.Flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.sink.Close()
}

// serializeTags is tags as gostats appends them to a name: ".__key=value"
// for each, sorted by key, the characters '.', ':' and '|' of a value made
// '_'; an empty key or value is left out.
func serializeTags(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k, v := range tags {
		if k != "" && v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(".__")
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(tagValue.Replace(tags[k]))
	}
	return b.String()
}

// tagValue replaces the characters a tag value may not hold.
var tagValue = strings.NewReplacer(".", "_", ":", "_", "|", "_")

// splitTags separates a serialized name into the name and its tags as
// "key:value" (dogstatsd's form), as the reference's dogstatsd sink does:
// the tags start at the first ".__", and a part without '=' is dropped.
func splitTags(name string) (string, []string) {
	short, rest, ok := strings.Cut(name, ".__")
	if !ok {
		return name, nil
	}
	var tags []string
	for _, p := range strings.Split(rest, ".__") {
		if k, v, ok := strings.Cut(p, "="); ok {
			tags = append(tags, k+":"+v)
		}
	}
	return short, tags
}
