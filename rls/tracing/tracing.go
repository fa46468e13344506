// Package tracing exports OpenTelemetry spans of ratelua-rls's
// ShouldRateLimit calls over OTLP, as the reference does with
// TRACING_ENABLED.
package tracing

import (
	"context"
	"crypto/rand"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.7.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/ratelua/ratelua/rls/settings"
)

// SpanName is the name of the span of each ShouldRateLimit call, the
// reference's.
const SpanName = "ShouldRateLimit Execution"

// Start returns a tracer provider exporting over OTLP (the endpoint from
// OTEL_EXPORTER_OTLP_*), sampling s.SamplingRate of the traces, the
// parent's decision kept. Shut it down to flush.
func Start(ctx context.Context, s settings.TracingSettings) (*sdktrace.TracerProvider, error) {
	var client otlptrace.Client
	switch s.Protocol {
	case "http", "":
		client = otlptracehttp.NewClient()
	case "grpc":
		client = otlptracegrpc.NewClient()
	default:
		return nil, fmt.Errorf("rls: TRACING_EXPORTER_PROTOCOL=%q: must be http or grpc", s.Protocol)
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("rls: OTLP trace exporter: %w", err)
	}
	id := s.InstanceID
	if id == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("rls: a random service.instance.id: %w", err)
		}
		b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80 // a version 4 UUID, as the reference's
		id = fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
	}
	res := resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceNameKey.String(s.ServiceName),
		semconv.ServiceNamespaceKey.String(s.ServiceNamespace),
		semconv.ServiceInstanceIDKey.String(id))
	return sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(s.SamplingRate))),
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
	), nil
}

// mdCarrier reads a W3C trace context from incoming gRPC metadata.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// UnaryServerInterceptor starts a server span for each call on tp, the
// caller's trace context (traceparent, baggage) its parent.
func UnaryServerInterceptor(tp trace.TracerProvider) grpc.UnaryServerInterceptor {
	tracer := tp.Tracer("ratelimit")
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			ctx = prop.Extract(ctx, mdCarrier(md))
		}
		ctx, span := tracer.Start(ctx, SpanName, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		return handler(ctx, req)
	}
}
