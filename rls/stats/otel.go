package stats

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ratelua/ratelua/rls/settings"
)

// MeterScope is the instrumentation scope of the service's meter.
const MeterScope = "github.com/ratelua/ratelua/rls"

// RuleAttribute is the attribute of every counter: the rule's statistics
// name (the reference's, e.g. "api.user_u1" with detailed_metric).
const RuleAttribute = attribute.Key("ratelua.rls.rule")

// NewMeterProvider returns the MeterProvider of the settings'
// OTEL_METRICS_EXPORTER: nil for none (the default), or for "otlp" one
// that exports every OTEL_METRIC_EXPORT_INTERVAL (60 s) by OTLP over HTTP
// to the collector the OTEL_EXPORTER_OTLP_* variables name (by default
// http://localhost:4318/v1/metrics). Shut it down to send what is left.
func NewMeterProvider(ctx context.Context, s settings.Settings) (*sdkmetric.MeterProvider, error) {
	if s.MetricsExporter != "otlp" {
		return nil, nil
	}
	exp, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("rls: OTEL_METRICS_EXPORTER=otlp: %w", err)
	}
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp))), nil
}

// newInstruments makes one OpenTelemetry counter per statistic on meters:
// "ratelua.rls.<name>" of unit {hit}.
func newInstruments(meters metric.MeterProvider) ([numStats]metric.Int64Counter, error) {
	var instruments [numStats]metric.Int64Counter
	meter := meters.Meter(MeterScope)
	descriptions := [...]string{
		"hits decided, per rule",
		"hits over the limit (denied, or admitted by shadow or quota mode)",
		"hits past the near-limit ratio of the limit and within it",
		"hits within the limit",
		"hits over the limit that shadow mode admitted",
		"hits over the limit answered by the deny cache, without a round trip",
	}
	for i, name := range Names() {
		c, err := meter.Int64Counter("ratelua.rls."+name, metric.WithUnit("{hit}"), metric.WithDescription(descriptions[i]))
		if err != nil {
			return instruments, fmt.Errorf("rls: counter %s: %w", name, err)
		}
		instruments[i] = c
	}
	return instruments, nil
}
