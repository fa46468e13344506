// Package statsink exports a service's statistics where the dashboards of
// envoyproxy/ratelimit users are: statsd (TCP or UDP), dogstatsd with tags,
// and a Prometheus endpoint whose names and labels are the reference's
// (its statsd names mapped by the statsd_exporter mapping the reference
// ships, or a mapping file of the user's).
//
// A Store holds named counters, as the reference's statistics library
// (lyft/gostats) does: a counter only grows, and every flush (each
// STATS_FLUSH_INTERVAL, 10 s, and at Close) sends each counter's increase
// since the previous flush, when not zero, to the Sink. Timers go to the
// sink at once. Names are the reference's, dot-separated; the store's tags
// (EXTRA_TAGS) end every name as gostats serializes them
// (".__key=value", sorted by key), which the dogstatsd sink turns back
// into tags.
//
// The package depends on nothing of the service: the service names its
// counters and adds to them.
package statsink
