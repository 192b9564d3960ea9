package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"gorm.io/gorm"
	gormtracing "gorm.io/plugin/opentelemetry/tracing"
)

// defaultServiceName is the service.name of the exported spans unless
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) says
// otherwise.
const defaultServiceName = "keenauthd"

// tracing is the OpenTelemetry tracing of serve (SPEC §21): a tracer
// provider exporting over OTLP/HTTP (protobuf) and the W3C Trace Context
// propagator, given to the ecosystem's instrumentation of each client and
// of the server. A nil *tracing is tracing switched off: every method then
// returns what it was given, so that nothing of OpenTelemetry runs.
//
// The provider is not installed as OpenTelemetry's global one: every
// instrumentation is handed it, so that the one-shot commands, dev and
// the tests that run serve in-process share no state.
type tracing struct {
	tp   *sdktrace.TracerProvider
	prop propagation.TextMapPropagator
}

// tracingEnabled reports whether the OTEL_* variables of getenv ask serve
// to export traces: when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, unless OTEL_SDK_DISABLED=true
// or OTEL_TRACES_EXPORTER=none. A protocol or exporter other than
// OTLP/HTTP with protobuf is a start error rather than silently something
// else.
func tracingEnabled(getenv func(string) string) (bool, error) {
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false, nil
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "none":
		return false, nil
	case "", "otlp":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: keenauthd exports traces over OTLP only (otlp, or none for no export)", e)
	}
	protocol, name := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if protocol == "" {
		protocol, name = getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	if protocol != "" && protocol != "http/protobuf" {
		return false, fmt.Errorf("%s=%q: keenauthd exports traces over OTLP/HTTP with protobuf only (http/protobuf)", name, protocol)
	}
	return true, nil
}

// newTracing starts the tracing of serve when getenv asks for it (see
// tracingEnabled), else returns nil. The exporter, the sampler, the batch
// span processor and the resource take the standard OTEL_* variables of
// the process environment (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _COMPRESSION, _CERTIFICATE…, OTEL_TRACES_SAMPLER and its _ARG,
// OTEL_BSP_*, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES). What
// OpenTelemetry itself reports (an export that failed) is logged to log.
func newTracing(ctx context.Context, getenv func(string) string, log *slog.Logger) (*tracing, error) {
	on, err := tracingEnabled(getenv)
	if err != nil || !on {
		return nil, err
	}
	otel.SetLogger(logr.FromSlogHandler(log.Handler()))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: OpenTelemetry reported an error", "error", err)
	}))
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	// Later options win: the default name, then the variables.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(defaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &tracing{tp: tp, prop: propagation.TraceContext{}}, nil
}

// handler wraps the router: one server span per request, continuing an
// incoming traceparent. The router names it by its route template and
// gives it the Request-Id (service.Server's requestID middleware). The
// operator's endpoints (probes, scrapes) make no trace.
func (t *tracing) handler(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return otelhttp.NewHandler(h, "keenauthd",
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithPropagators(t.prop),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithFilter(func(r *http.Request) bool { return !operatorPath(r.URL.Path) }),
	)
}

// instrumentDB adds a span per SQL statement to db, with the statement's
// text but never its values (they may be a key's hash, a document…).
func (t *tracing) instrumentDB(db *gorm.DB) error {
	if t == nil {
		return nil
	}
	return db.Use(gormtracing.NewPlugin(gormtracing.WithTracerProvider(t.tp), gormtracing.WithoutQueryVariables(), gormtracing.WithoutMetrics()))
}

// instrumentRedis adds a span per Redis command (and pipeline) to rdb,
// named by the command, without its arguments (keys and values: an
// idempotency record holds a stored answer).
func (t *tracing) instrumentRedis(rdb redis.UniversalClient) error {
	if t == nil {
		return nil
	}
	return redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(t.tp),
		redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false))
}

// httpClient is the HTTP client of the outgoing calls (the federation
// service): a span per call, and the traceparent sent along. Nil without
// tracing (the caller's default client).
func (t *tracing) httpClient() *http.Client {
	if t == nil {
		return nil
	}
	return &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport,
		otelhttp.WithTracerProvider(t.tp), otelhttp.WithPropagators(t.prop), otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()))}
}

// shutdown ends the tracing once serve has drained: the spans still
// buffered are exported, within ctx.
func (t *tracing) shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}
