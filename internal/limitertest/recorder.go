package limitertest

import (
	"context"
	"sync"

	"github.com/ratelua/ratelua"
)

// Recorder collects a limiter's events.
type Recorder struct {
	mu     sync.Mutex
	events []ratelua.Event
}

// Observe is an Options.Observe hook that records e.
func (r *Recorder) Observe(_ context.Context, e ratelua.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Take returns the recorded events and forgets them.
func (r *Recorder) Take() []ratelua.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// Decisions takes the decision events, dropping the loads.
func (r *Recorder) Decisions() []ratelua.Event {
	var out []ratelua.Event
	for _, e := range r.Take() {
		if e.Kind != ratelua.KindLoad {
			out = append(out, e)
		}
	}
	return out
}

// Kinds counts events by kind.
func Kinds(events []ratelua.Event) map[string]int {
	out := map[string]int{}
	for _, e := range events {
		out[e.Kind]++
	}
	return out
}
