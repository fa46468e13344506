package reference

import (
	"fmt"
	"slices"
	"testing"
)

// unit is a part of a comparison: requests sent to both services, pair
// by pair, counted in the statistics of domains.
type unit struct {
	name    string
	domains []string
	n       int // requests
	// run sends the requests, failing the test on an answer that differs;
	// it returns "" when every pair ran within one second, else where a
	// pair straddled one (the two services may have seen two seconds, and
	// their states and statistics may differ from there on).
	run func(ref, ours *service) string
}

// maxRestarts bounds the restarts of one session.
const maxRestarts = 20

// session compares two services unit by unit. Both read the machine's
// clock, so a pair of calls compares only within one second; a pair that
// straddles one (a loaded machine can hold a process past any margin)
// does not fail the comparison: the session compares the statistics of
// the units done that the pair could not have touched, starts both
// services afresh on flushed servers, and runs again the units that
// shared a domain with it, then it. Restarts are bounded and reported.
type session struct {
	t         *testing.T
	start     func() (ref, ours *service)
	ref, ours *service
	done      []unit

	requests, rules, restarts int
	cached                    uint64
}

// newSession starts the services with start (on flushed servers).
func newSession(t *testing.T, start func() (ref, ours *service)) *session {
	s := &session{t: t, start: start}
	s.ref, s.ours = start()
	return s
}

// run runs units in order, restarting on a pair that straddles a second.
func (s *session) run(units ...unit) {
	queue := slices.Clone(units)
	for len(queue) > 0 {
		u := queue[0]
		where := u.run(s.ref, s.ours)
		if where == "" {
			s.done = append(s.done, u)
			queue = queue[1:]
			continue
		}
		s.restarts++
		s.t.Logf("%s %s: the two answers straddle a second; restart %d: the services afresh on flushed servers", u.name, where, s.restarts)
		if s.restarts > maxRestarts {
			s.t.Fatalf("%d restarts: pairs of calls keep straddling a second", maxRestarts)
		}
		var keep, redo []unit
		for _, d := range s.done {
			if overlap(d.domains, u.domains) {
				redo = append(redo, d)
			} else {
				keep = append(keep, d)
			}
		}
		s.done = keep
		s.compareDone()
		s.ref.stop()
		s.ours.stop()
		s.ref, s.ours = s.start()
		queue = append(redo, queue...)
	}
}

// compareDone compares the statistics of the units done on the services
// running, and counts their requests.
func (s *session) compareDone() {
	var domains []string
	for _, u := range s.done {
		domains = append(domains, u.domains...)
		s.requests += u.n
	}
	n, cached := compareStats(s.t, s.ref, s.ours, domains)
	s.rules += n
	s.cached += cached
	s.done = nil
}

// finish compares what is left and returns the requests and the rules
// compared.
func (s *session) finish() (requests, rules int) {
	s.t.Helper()
	s.compareDone()
	if s.rules == 0 {
		s.t.Error("no statistics to compare")
	}
	if (s.ours.denyCache || s.ours.localCache) && s.cached == 0 {
		s.t.Error("the deny cache (or local cache) answered no hit")
	}
	return s.requests, s.rules
}

// restartNote says, for the report, how many restarts it took.
func (s *session) restartNote() string {
	if s.restarts == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d restarts: pairs that straddled a second)", s.restarts)
}

func overlap(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
