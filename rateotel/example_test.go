package rateotel_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/embedded"
	"github.com/ratelua/ratelua/rateotel"
)

// Every decision of a limiter counted as an OpenTelemetry metric,
// ratelua.decisions, by script, prefix and result. rateotel.New() with no
// option uses the global providers; here a MeterProvider with a manual
// reader shows what it records.
func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	obs, err := rateotel.New(rateotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		panic(err)
	}
	// No server: the embedded engine, its clock fixed for this output. A
	// service passes ratelua.Rueidis(rueidisClient) or an adapter's Client.
	client := embedded.New(embedded.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	api, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "api", Observe: obs.Observe}, ratelua.PerSecond(1, 2))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 3 {
		if _, err := api.Allow(ctx, "customer-42"); err != nil {
			panic(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "ratelua.decisions" {
				for _, p := range sum.DataPoints {
					result, _ := p.Attributes.Value("ratelua.result")
					fmt.Println(m.Name, result.AsString(), p.Value)
				}
			}
		}
	}
	// Unordered output:
	// ratelua.decisions allowed 2
	// ratelua.decisions denied 1
}
