// Package rateotel reports what ratelua limiters decide as OpenTelemetry
// metrics, and each decision as a span if asked: an Observer's Observe is
// a ratelua.Options.Observe hook.
//
//	obs, err := rateotel.New() // the global MeterProvider and TracerProvider
//	if err != nil {
//		return err
//	}
//	api, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "api", Observe: obs.Observe},
//		ratelua.PerSecond(100, 200))
//
// The instruments, under the instrumentation scope named ScopeName with
// Version (no attribute ever holds an event key: their number is
// unbounded, and they are often personal data):
//
//   - ratelua.decisions (counter, {decision}): every decision, with
//     ratelua.script ("token_bucket@v2"), ratelua.prefix, ratelua.result
//     (allowed, denied, dry_run, fail_open, error, fallback, batch: the
//     Kind of the event), ratelua.limit (the index of the deciding limit,
//     -1 when none decided), ratelua.allowed (what the caller got) and
//     ratelua.local (answered in the process: the deny cache, the
//     fallback, a hot key's batch, an argument refused in Go);
//   - ratelua.decision.duration (histogram, s): how long callers waited,
//     with ratelua.script, ratelua.prefix and ratelua.result;
//   - ratelua.script.loads (counter, {load}): the EVAL after NOSCRIPT and
//     the FUNCTION LOAD after a missing function, with ratelua.script,
//     ratelua.prefix and, when the load failed, error.type (unavailable,
//     error_reply or _OTHER);
//   - ratelua.fallback.active (up-down counter, {limiter}): 1 while a
//     limiter answers from its fallback, with ratelua.script and
//     ratelua.prefix.
//
// With WithSpans, each decision is also a span "ratelua.decision", a child
// of the span in the caller's context, with the decision's attributes,
// ratelua.events, ratelua.remaining and ratelua.retry_after (s); an error
// sets its status. The span is made once the decision is known, with the
// times it began and ended, so spans of the client (rueidisotel's EVALSHA)
// are its siblings.
package rateotel

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratelua/ratelua"
)

// ScopeName is the instrumentation scope of the meter and the tracer: this
// package's import path.
const ScopeName = "github.com/ratelua/ratelua/rateotel"

// Version is the version of this module in the running binary, as the
// instrumentation scope's version; "devel" when it is not known (a build
// from a work tree).
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	// The package is its module's root: ScopeName is the module path.
	for _, m := range append([]*debug.Module{&info.Main}, info.Deps...) {
		if m.Path == ScopeName && m.Version != "" && m.Version != "(devel)" {
			return m.Version
		}
	}
	return "devel"
}

// Option configures New.
type Option func(*config)

type config struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	spans   bool
}

// WithMeterProvider sets the MeterProvider; by default the global one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meters = mp }
}

// WithTracerProvider sets the TracerProvider of WithSpans; by default the
// global one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracers = tp }
}

// WithSpans makes a span of every decision, a child of the caller's span.
func WithSpans() Option {
	return func(c *config) { c.spans = true }
}

// Attribute keys.
const (
	keyScript  = attribute.Key("ratelua.script")
	keyPrefix  = attribute.Key("ratelua.prefix")
	keyResult  = attribute.Key("ratelua.result")
	keyLimit   = attribute.Key("ratelua.limit")
	keyAllowed = attribute.Key("ratelua.allowed")
	keyLocal   = attribute.Key("ratelua.local")
	keyErrType = attribute.Key("error.type")
)

// Observer turns ratelua events into metrics and spans. It is safe for
// concurrent use; one Observer serves any number of limiters.
type Observer struct {
	decisions metric.Int64Counter
	duration  metric.Float64Histogram
	loads     metric.Int64Counter
	fallback  metric.Int64UpDownCounter
	tracer    trace.Tracer // nil without WithSpans

	mu   sync.RWMutex
	sets map[setKey]*sets
}

// setKey is what the attributes of an event depend on.
type setKey struct {
	kind, script, prefix, errType string
	limit                         int
	allowed, local                bool
}

// sets are the attributes of one setKey, built once.
type sets struct {
	decision []metric.AddOption
	duration []metric.RecordOption
	attrs    []attribute.KeyValue
}

// durationBounds are the histogram's buckets in seconds: a local answer
// takes microseconds, a round trip a fraction of a millisecond, a timeout
// seconds.
var durationBounds = []float64{0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// New returns an Observer on the providers of opts.
func New(opts ...Option) (*Observer, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.meters == nil {
		c.meters = otel.GetMeterProvider()
	}
	meter := c.meters.Meter(ScopeName, metric.WithInstrumentationVersion(Version()))
	o := &Observer{sets: map[setKey]*sets{}}
	var errs [4]error
	o.decisions, errs[0] = meter.Int64Counter("ratelua.decisions",
		metric.WithDescription("Rate limiter decisions, by script, prefix, result and deciding limit."),
		metric.WithUnit("{decision}"))
	o.duration, errs[1] = meter.Float64Histogram("ratelua.decision.duration",
		metric.WithDescription("How long a caller waited for a rate limiter decision."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBounds...))
	o.loads, errs[2] = meter.Int64Counter("ratelua.script.loads",
		metric.WithDescription("Script loads: the EVAL after NOSCRIPT, the FUNCTION LOAD after a missing function."),
		metric.WithUnit("{load}"))
	o.fallback, errs[3] = meter.Int64UpDownCounter("ratelua.fallback.active",
		metric.WithDescription("Limiters answering from their in-process fallback because the server cannot be reached."),
		metric.WithUnit("{limiter}"))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("rateotel: create instruments: %w", err)
	}
	if c.spans {
		if c.tracers == nil {
			c.tracers = otel.GetTracerProvider()
		}
		o.tracer = c.tracers.Tracer(ScopeName, trace.WithInstrumentationVersion(Version()))
	}
	return o, nil
}

// Observe records e; it is the hook for ratelua.Options.Observe.
func (o *Observer) Observe(ctx context.Context, e ratelua.Event) {
	switch e.Kind {
	case ratelua.KindLoad:
		k := setKey{kind: e.Kind, script: e.Script, prefix: e.Prefix, errType: errorType(e.Err)}
		o.loads.Add(ctx, 1, o.setsOf(k).decision...)
	case ratelua.KindFallbackEnter, ratelua.KindFallbackLeave:
		k := setKey{kind: ratelua.KindFallbackEnter, script: e.Script, prefix: e.Prefix}
		delta := int64(1)
		if e.Kind == ratelua.KindFallbackLeave {
			delta = -1
		}
		o.fallback.Add(ctx, delta, o.setsOf(k).decision...)
	default:
		k := setKey{kind: e.Kind, script: e.Script, prefix: e.Prefix, limit: e.Result.Limit, allowed: e.Result.Allowed, local: e.Local}
		s := o.setsOf(k)
		o.decisions.Add(ctx, 1, s.decision...)
		o.duration.Record(ctx, e.Latency.Seconds(), s.duration...)
		if o.tracer != nil {
			o.span(ctx, e, s)
		}
	}
}

// span records decision e as a span that ended now.
func (o *Observer) span(ctx context.Context, e ratelua.Event, s *sets) {
	end := time.Now()
	_, span := o.tracer.Start(ctx, "ratelua.decision",
		trace.WithTimestamp(end.Add(-e.Latency)), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(s.attrs...))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.Int64("ratelua.events", e.N),
			attribute.Int64("ratelua.remaining", e.Result.Remaining),
			attribute.Float64("ratelua.retry_after", e.Result.RetryAfter.Seconds()))
		if e.Kind == ratelua.KindError && e.Err != nil {
			span.RecordError(e.Err)
			span.SetStatus(codes.Error, e.Err.Error())
		}
	}
	span.End(trace.WithTimestamp(end))
}

// setsOf returns the attribute sets of k, building them once.
func (o *Observer) setsOf(k setKey) *sets {
	o.mu.RLock()
	s := o.sets[k]
	o.mu.RUnlock()
	if s != nil {
		return s
	}
	var attrs []attribute.KeyValue
	switch k.kind {
	case ratelua.KindLoad:
		attrs = []attribute.KeyValue{keyScript.String(k.script), keyPrefix.String(k.prefix)}
		if k.errType != "" {
			attrs = append(attrs, keyErrType.String(k.errType))
		}
	case ratelua.KindFallbackEnter:
		attrs = []attribute.KeyValue{keyScript.String(k.script), keyPrefix.String(k.prefix)}
	default:
		attrs = []attribute.KeyValue{
			keyScript.String(k.script), keyPrefix.String(k.prefix), keyResult.String(k.kind),
			keyLimit.Int(k.limit), keyAllowed.Bool(k.allowed), keyLocal.Bool(k.local),
		}
	}
	s = &sets{attrs: attrs}
	if len(attrs) >= 3 {
		// Script, prefix and result (before NewSet sorts attrs in place).
		s.duration = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs[0], attrs[1], attrs[2]))}
	}
	s.decision = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
	o.mu.Lock()
	if old := o.sets[k]; old != nil {
		s = old
	} else {
		o.sets[k] = s
	}
	o.mu.Unlock()
	return s
}

// errorType is the error.type of a failed load: unavailable (no answer),
// error_reply (the server refused), or _OTHER; "" for none.
func errorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ratelua.ErrScript):
		return "error_reply"
	case errors.Is(err, ratelua.ErrUnavailable):
		return "unavailable"
	}
	return "_OTHER"
}
