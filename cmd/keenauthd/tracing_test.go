package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestTracingEnabledByTheOTLPEndpointVariables(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		on   bool
		err  string
	}{
		{name: "no variable", env: map[string]string{}},
		{name: "other OTEL variables only", env: map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on",
			"OTEL_EXPORTER_OTLP_HEADERS": "a=b", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{name: "SDK disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "exporter otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{name: "exporter zipkin", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "zipkin"},
			err: "OTEL_TRACES_EXPORTER"},
		{name: "protocol grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			err: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, on: true},
		{name: "traces protocol json", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, err: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			on, err := tracingEnabled(getenv)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || on != tc.on {
				t.Fatalf("tracingEnabled = %v, %v; want %v", on, err, tc.on)
			}
			// Off: no tracing at all, and every wiring step is the identity.
			tr, err := newTracing(context.Background(), getenv, newLogger(io.Discard, 0))
			if err != nil || (tr != nil) != tc.on {
				t.Fatalf("newTracing = %v, %v", tr, err)
			}
			if tr != nil {
				if err := tr.shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
				return
			}
			if tr.httpClient() != nil || tr.handler(nil) != nil || tr.instrumentDB(nil) != nil || tr.shutdown(context.Background()) != nil {
				t.Fatal("a nil tracing changed something")
			}
		})
	}
}

// TestServeRefusesAnOTLPProtocolItCannotSpeak: a start error naming the
// variable, before anything is opened.
func TestServeRefusesAnOTLPProtocolItCannotSpeak(t *testing.T) {
	env := map[string]string{
		"KEENAUTHD_IDEMPOTENCY_SECRET": "s",
		"KEENAUTHD_DATABASE_URL":       "postgres://127.0.0.1:1/none",
		"OTEL_EXPORTER_OTLP_ENDPOINT":  "http://127.0.0.1:4317",
		"OTEL_EXPORTER_OTLP_PROTOCOL":  "grpc",
	}
	err := run(context.Background(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("serve = %v, want a start error naming OTEL_EXPORTER_OTLP_PROTOCOL", err)
	}
}
