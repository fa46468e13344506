package settings

import "math"

// TracingSettings are the OpenTelemetry tracing settings (TRACING_*); the
// exporter reads OTEL_EXPORTER_OTLP_* itself, as the reference's does.
type TracingSettings struct {
	// Enabled (TRACING_ENABLED) exports a span for each ShouldRateLimit.
	Enabled bool
	// Protocol (TRACING_EXPORTER_PROTOCOL) is http or grpc (OTLP).
	Protocol string
	// ServiceName, ServiceNamespace and InstanceID
	// (TRACING_SERVICE_NAME, _NAMESPACE, _INSTANCE_ID) are the resource's
	// service.name, service.namespace and service.instance.id (a random
	// UUID when empty).
	ServiceName, ServiceNamespace, InstanceID string
	// SamplingRate (TRACING_SAMPLING_RATE) is the share of traces sampled,
	// the parent's decision kept.
	SamplingRate float64
}

// tracing reads the tracing settings and refuses a protocol or rate the
// exporter cannot use, naming the variable.
func (r *envReader) tracing() TracingSettings {
	t := TracingSettings{Enabled: r.bool("TRACING_ENABLED"), Protocol: r.str("TRACING_EXPORTER_PROTOCOL"),
		ServiceName: r.str("TRACING_SERVICE_NAME"), ServiceNamespace: r.str("TRACING_SERVICE_NAMESPACE"),
		InstanceID: r.str("TRACING_SERVICE_INSTANCE_ID"), SamplingRate: r.float("TRACING_SAMPLING_RATE")}
	if !t.Enabled {
		return t
	}
	if t.Protocol != "http" && t.Protocol != "grpc" {
		r.fail("TRACING_EXPORTER_PROTOCOL", t.Protocol, "must be http or grpc (OTLP), as the reference's")
	}
	if math.IsNaN(t.SamplingRate) || t.SamplingRate < 0 || t.SamplingRate > 1 {
		r.fail("TRACING_SAMPLING_RATE", r.getenv("TRACING_SAMPLING_RATE"), "must be a share from 0 to 1, such as 0.1")
	}
	return t
}

// tracingUnused lists the TRACING_* settings set while TRACING_ENABLED is
// false, which nothing reads.
func (r *envReader) tracingUnused(t TracingSettings) []UnusedSetting {
	if t.Enabled {
		return nil
	}
	var unused []UnusedSetting
	for _, name := range []string{"TRACING_SERVICE_NAME", "TRACING_SERVICE_NAMESPACE", "TRACING_SERVICE_INSTANCE_ID", "TRACING_EXPORTER_PROTOCOL", "TRACING_SAMPLING_RATE"} {
		if v := r.getenv(name); v != "" {
			unused = append(unused, UnusedSetting{Name: name, Value: v, Why: "read only with TRACING_ENABLED=true"})
		}
	}
	return unused
}
