package stats

import (
	"context"

	"github.com/ratelua/ratelua"
)

// Recorder is all the service asks of the statistics: what each decided
// descriptor adds to its rule's counters, worked out as the reference
// works it out, and adding it under the rule's name, and the service's
// own events. *Stats is the Recorder of ratelua-rls; the exported
// statistics (statsd, dogstatsd, Prometheus: Stats.Export) are behind
// Stats, not in the service.
type Recorder interface {
	// ReferenceCounts are the statistics of n hits of a reference rule
	// that took its window's count from before to after under limit;
	// shadow is the rule's shadow_mode, local that the deny cache
	// answered.
	ReferenceCounts(n, before, after, limit uint64, shadow, local bool) Counts
	// ExtensionCounts are the statistics of n hits of an extension rule
	// decided by out under its deciding limit's requests_per_unit.
	ExtensionCounts(n, limit uint64, out ratelua.Result, shadow bool) Counts
	// Add adds c to the statistics name of the rule group (the rule's
	// key, whose names Add bounds), name not yet sanitized.
	Add(ctx context.Context, group, name string, c Counts)
	// Count counts one of the service's events (a request refused, a
	// backend error, a request shadow mode let through).
	Count(e Event)
	// DomainNotFound counts a descriptor of a domain no configuration has.
	DomainNotFound(domain string)
}

// Stats is a Recorder.
var _ Recorder = (*Stats)(nil)
