package stats

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
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
