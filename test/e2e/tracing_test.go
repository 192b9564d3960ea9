package e2e_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/fakefederation"
)

// otlpReceiver is an OTLP/HTTP trace receiver (protobuf), as a collector
// or Jaeger's port 4318 would be: it keeps every payload as received and
// the spans decoded from it.
type otlpReceiver struct {
	t    *testing.T
	srv  *httptest.Server
	path string // where exports are posted: /v1/traces unless a test says

	mu       sync.Mutex
	payloads [][]byte // as received, before any decompression
	headers  []http.Header
	spans    []exportedSpan
	bad      []string // requests that were not a well-formed export
}

// exportedSpan is a span with the service.name of its resource.
type exportedSpan struct {
	*tracepb.Span
	Service string
}

func newOTLPReceiver(t *testing.T, ln net.Listener) *otlpReceiver {
	r := &otlpReceiver{t: t, path: "/v1/traces"}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serveHTTP))
	if ln != nil {
		r.srv.Listener.Close()
		r.srv.Listener = ln
	}
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.bad) > 0 {
			t.Errorf("the OTLP receiver got malformed exports: %v", r.bad)
		}
	})
	return r
}

// URL is the receiver's base URL (OTEL_EXPORTER_OTLP_ENDPOINT: the
// exporter appends /v1/traces).
func (r *otlpReceiver) URL() string { return r.srv.URL }

func (r *otlpReceiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.payloads = append(r.payloads, raw)
	r.headers = append(r.headers, req.Header.Clone())
	if req.Method != http.MethodPost || req.URL.Path != r.path || req.Header.Get("Content-Type") != "application/x-protobuf" {
		r.bad = append(r.bad, fmt.Sprintf("%s %s %s", req.Method, req.URL.Path, req.Header.Get("Content-Type")))
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	body := raw
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			r.bad = append(r.bad, "gzip: "+err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &export); err != nil {
		r.bad = append(r.bad, "protobuf: "+err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, rs := range export.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, exportedSpan{Span: s, Service: service})
			}
		}
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans returns the spans received so far.
func (r *otlpReceiver) Spans() []exportedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exportedSpan(nil), r.spans...)
}

// Payloads returns the bodies of the exports received so far.
func (r *otlpReceiver) Payloads() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.payloads...)
}

// Trace returns the spans of one trace (hex trace id).
func (r *otlpReceiver) Trace(traceID string) []exportedSpan {
	var out []exportedSpan
	for _, s := range r.Spans() {
		if hex.EncodeToString(s.TraceId) == traceID {
			out = append(out, s)
		}
	}
	return out
}

// waitFor polls cond until it holds, failing t after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// attr returns a span attribute as a string ("" when absent).
func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return anyValue(kv.Value)
		}
	}
	return ""
}

func anyValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	}
	return fmt.Sprint(v)
}

// descendsFrom reports whether span s is root or one of its descendants
// within spans.
func descendsFrom(s exportedSpan, root []byte, spans []exportedSpan) bool {
	byID := map[string]exportedSpan{}
	for _, x := range spans {
		byID[string(x.SpanId)] = x
	}
	for range len(spans) + 1 {
		if bytes.Equal(s.SpanId, root) {
			return true
		}
		p, ok := byID[string(s.ParentSpanId)]
		if !ok {
			return false
		}
		s = p
	}
	return false
}

// tracedCluster is a serve process exporting its traces to a receiver of
// the test, with a fake federation service.
type tracedCluster struct {
	*cluster
	Recv *otlpReceiver
	Fed  *fakefederation.Server
}

const (
	tracingFedToken = "e2e-federation-token-c4n4ry"
	tracingSecret   = "tracing-canary-client-secret-9d1e"
)

// newTracedCluster starts one serve process exporting to a new receiver;
// extra adds variables (OTEL_* among them).
func newTracedCluster(t *testing.T, extra ...string) *tracedCluster {
	t.Helper()
	recv := newOTLPReceiver(t, nil)
	fed := fakefederation.New(tracingFedToken)
	t.Cleanup(fed.Close)
	env := append([]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL(),
		"KEENAUTHD_FEDERATION_URL=" + fed.URL(),
		"KEENAUTHD_FEDERATION_TOKEN=" + tracingFedToken,
	}, extra...)
	return &tracedCluster{cluster: newCluster(t, 1, env...), Recv: recv, Fed: fed}
}

// send sends a request with the cluster's key and the given headers.
func (c *tracedCluster) send(method, path string, body any, header map[string]string) answer {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.Nodes[0].URL+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Secret)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// connectionPlan creates a plan that adds an enterprise connection with
// OIDC material, whose client secret an apply resolves.
func (c *tracedCluster) connectionPlan(key string) string {
	c.t.Helper()
	doc := map[string]any{"connections": map[string]any{key: map[string]any{
		"type": "enterprise", "display_name": "ACME " + key, "active": false,
		"oidc": map[string]any{"issuer": "https://idp.acme.example", "client_id": "client-" + key, "scopes": []any{"openid", "email"}}}}}
	a := c.send("POST", "/v1/config-plans", map[string]any{"config": doc}, nil)
	if a.Status != http.StatusCreated {
		c.t.Fatalf("create plan: %d %s", a.Status, a.Body)
	}
	return a.JSON()["id"].(string)
}

// applyWithSecret applies a connection plan with its resolved secret.
func (c *tracedCluster) applyWithSecret(planID, key, secret string, header map[string]string) answer {
	c.t.Helper()
	return c.send("POST", applyPath(planID), map[string]any{
		"resolved_secrets": map[string]any{config.SecretRef(key): secret}, "sp_host": "login.shop.example"}, header)
}

// logRecords decodes the JSON lines the process logged so far.
func logRecords(logs string) []map[string]any {
	var out []map[string]any
	for _, raw := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(raw), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

const (
	incomingTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingParent = "00f067aa0ba902b7"
)

// TestTracingOneTracePerRequest: an apply that writes OIDC material runs
// SQL, Redis commands and a call to the federation service; all of them
// are spans of one trace, under the request's server span, which
// continues the incoming traceparent, is named by the route template and
// carries http.route, the status and the Request-Id. The request's log
// lines carry the trace and span ids of that span.
func TestTracingOneTracePerRequest(t *testing.T) {
	c := newTracedCluster(t, "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=keenauthd-e2e")
	planID := c.connectionPlan("acme-sso")
	a := c.applyWithSecret(planID, "acme-sso", tracingSecret, map[string]string{
		"traceparent":     "00-" + incomingTrace + "-" + incomingParent + "-01",
		"Idempotency-Key": "tracing-apply-1",
	})
	if a.Status != http.StatusOK {
		t.Fatalf("apply: %d %s", a.Status, a.Body)
	}
	if c.Fed.SecretOf(c.EnvID, connectionID(t, c, "acme-sso")) != tracingSecret {
		t.Fatal("the federation service did not get the secret: the apply did not call it")
	}
	reqID := a.Header.Get("Request-Id")

	var server exportedSpan
	var sql, redisCmd, outgoing []exportedSpan
	waitFor(t, "the apply's server, SQL, Redis and federation spans", func() bool {
		spans := c.Recv.Trace(incomingTrace)
		server, sql, redisCmd, outgoing = exportedSpan{}, nil, nil, nil
		for _, s := range spans {
			if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
				server = s
			}
		}
		if server.Span == nil {
			return false
		}
		for _, s := range spans {
			if s.Kind != tracepb.Span_SPAN_KIND_CLIENT || !descendsFrom(s, server.SpanId, spans) {
				continue
			}
			switch {
			case attr(s.Span, "db.system") == "postgresql":
				sql = append(sql, s)
			case attr(s.Span, "db.system") == "redis":
				redisCmd = append(redisCmd, s)
			case attr(s.Span, "http.request.method") == "PUT":
				outgoing = append(outgoing, s)
			}
		}
		return len(sql) > 0 && len(redisCmd) > 0 && len(outgoing) > 0
	})

	// The server span continues the incoming traceparent.
	if got := hex.EncodeToString(server.ParentSpanId); got != incomingParent {
		t.Errorf("server span's parent = %s, want the traceparent's %s", got, incomingParent)
	}
	if server.Name != "/v1/config-plans/:id" {
		t.Errorf("server span name = %q, want the route template", server.Name)
	}
	for k, want := range map[string]string{
		"http.route": "/v1/config-plans/:id", "http.response.status_code": "200", "http.request.method": "POST",
		"keenauth.request_id": reqID,
	} {
		if got := attr(server.Span, k); got != want {
			t.Errorf("server span %s = %q, want %q", k, got, want)
		}
	}
	if server.Service != "keenauthd-e2e" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's", server.Service)
	}
	// SQL spans have their statement, never its values: every statement
	// of the request is scoped by the environment, whose id is a value.
	for _, s := range sql {
		if q := attr(s.Span, "db.statement"); q == "" || strings.Contains(q, c.EnvID) {
			t.Errorf("SQL span %q: db.statement %q, want the statement without its values", s.Name, q)
		}
	}
	// Redis spans are named by the command, without its arguments (the
	// keys hold the environment's id).
	for _, s := range redisCmd {
		for _, kv := range s.Attributes {
			if strings.Contains(anyValue(kv.Value), c.EnvID) {
				t.Errorf("Redis span %q carries its arguments: %s=%q", s.Name, kv.Key, anyValue(kv.Value))
			}
		}
	}
	if !strings.HasPrefix(attr(outgoing[0].Span, "url.full"), c.Fed.URL()+"/v1/") {
		t.Errorf("federation span url.full = %q", attr(outgoing[0].Span, "url.full"))
	}
	// Every span of the trace is the apply's: the creation of the plan is a
	// trace of its own.
	for _, s := range c.Recv.Trace(incomingTrace) {
		if !descendsFrom(s, server.SpanId, c.Recv.Trace(incomingTrace)) {
			t.Errorf("span %q of the trace is not under the request's span", s.Name)
		}
	}
	var creations int
	for _, s := range c.Recv.Spans() {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "/v1/config-plans" {
			creations++
			if hex.EncodeToString(s.TraceId) == incomingTrace {
				t.Error("the plan's creation joined the apply's trace")
			}
		}
	}
	if creations != 1 {
		t.Errorf("%d server spans for the plan's creation, want 1", creations)
	}

	// Every line logged for the request carries the server span's ids.
	var lines int
	for _, l := range logRecords(c.Nodes[0].Logs()) {
		if l["request_id"] != reqID {
			continue
		}
		lines++
		if l["trace_id"] != incomingTrace || l["span_id"] != hex.EncodeToString(server.SpanId) {
			t.Errorf("log line %v: want trace_id %s and span_id %x", l, incomingTrace, server.SpanId)
		}
	}
	if lines == 0 {
		t.Fatalf("no log line with request_id %s:\n%s", reqID, c.Nodes[0].Logs())
	}
}

// TestTracingSpansTheStatementsReadWithPgx: the reads configdb sends with
// pgx itself, past GORM and its plugin (a revision's row; the resources of
// its kind, read beside it for its diff), have their spans too, as the
// plugin makes them: under the request's span, with the statement and
// never its values.
func TestTracingSpansTheStatementsReadWithPgx(t *testing.T) {
	c := newTracedCluster(t, "OTEL_BSP_SCHEDULE_DELAY=50")
	a := c.applyWithSecret(c.connectionPlan("acme-sso"), "acme-sso", tracingSecret, nil)
	rev, _ := a.JSON()["revision_id"].(string)
	if a.Status != http.StatusOK || rev == "" {
		t.Fatalf("apply: %d %s", a.Status, a.Body)
	}
	for i, tc := range []struct {
		path string
		want []string // a part of the statement of each span wanted
	}{
		{"/v1/config-revisions/" + rev, []string{"FROM config_revisions"}},
		{"/v1/config-revisions/" + rev + "/diff", []string{"FROM config_revisions", "LEFT JOIN resources r ON"}},
	} {
		trace := fmt.Sprintf("%031x%d", 0xab, i+1)
		if g := c.send("GET", tc.path, nil, map[string]string{"traceparent": "00-" + trace + "-" + incomingParent + "-01"}); g.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", tc.path, g.Status, g.Body)
		}
		var sql []exportedSpan
		waitFor(t, "the spans of GET "+tc.path, func() bool {
			spans := c.Recv.Trace(trace)
			var server []byte
			for _, s := range spans {
				if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
					server = s.SpanId
				}
			}
			sql = nil
			for _, s := range spans {
				if server != nil && s.Kind == tracepb.Span_SPAN_KIND_CLIENT && attr(s.Span, "db.system") == "postgresql" && descendsFrom(s, server, spans) {
					sql = append(sql, s)
				}
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(sql, func(s exportedSpan) bool { return strings.Contains(attr(s.Span, "db.statement"), w) }) {
					return false
				}
			}
			return true
		})
		for _, s := range sql {
			if q := attr(s.Span, "db.statement"); strings.Contains(q, c.EnvID) || strings.Contains(q, rev) {
				t.Errorf("GET %s: SQL span %q carries a value: %q", tc.path, s.Name, q)
			}
			if strings.Contains(attr(s.Span, "db.statement"), "FROM config_revisions") && attr(s.Span, "db.operation") != "select" {
				t.Errorf("GET %s: SQL span %q: db.operation %q", tc.path, s.Name, attr(s.Span, "db.operation"))
			}
		}
	}
}

// connectionID reads a connection's id from the current configuration.
func connectionID(t *testing.T, c *tracedCluster, key string) string {
	t.Helper()
	var id string
	if err := c.DB.DB.Raw("SELECT resource_id FROM resources WHERE environment_id = ? AND kind = 'connection' AND key = ?", c.EnvID, key).Scan(&id).Error; err != nil || id == "" {
		t.Fatalf("connection %s: %q %v", key, id, err)
	}
	return id
}

// secretForms lists a secret as sent and in the encodings an exporter
// might carry it in (base64, hex).
func secretForms(s string) []string {
	b := []byte(s)
	return []string{s, hex.EncodeToString(b), base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)}
}

// TestTracingCanary: no secret, API key or resolved_secrets value is in
// any exported span, attribute or event: the apply with a resolved secret
// that the federation service stores, one it refuses quoting the secret
// back, a validation failure with the secret in the body, and the
// configuration's secrets of the process (federation token, idempotency
// and internal secrets).
func TestTracingCanary(t *testing.T) {
	c := newTracedCluster(t, "OTEL_BSP_SCHEDULE_DELAY=50")
	p1 := c.connectionPlan("acme-sso")
	if a := c.applyWithSecret(p1, "acme-sso", tracingSecret, map[string]string{"Idempotency-Key": "canary-1"}); a.Status != http.StatusOK {
		t.Fatalf("apply: %d %s", a.Status, a.Body)
	}
	// Replayed: the stored answer passes through Redis.
	if a := c.applyWithSecret(p1, "acme-sso", tracingSecret, map[string]string{"Idempotency-Key": "canary-1"}); !a.Replayed() {
		t.Fatalf("replay: %d %s", a.Status, a.Body)
	}
	p2 := c.connectionPlan("beta-sso")
	c.Fed.Next(1).FailWith(http.StatusUnprocessableEntity,
		`{"errors": [{"pointer": "/client_secret", "code": "`+tracingSecret+`"}]}`)
	if a := c.applyWithSecret(p2, "beta-sso", tracingSecret, nil); a.Status != http.StatusUnprocessableEntity {
		t.Fatalf("refused apply: %d %s", a.Status, a.Body)
	}
	if a := c.send("POST", applyPath(p2), map[string]any{"resolved_secrets": map[string]any{"KEENAUTH_UNUSED": tracingSecret}}, nil); a.Status != http.StatusUnprocessableEntity {
		t.Fatalf("invalid apply: %d %s", a.Status, a.Body)
	}
	// Wait for the spans of the federation calls (two PUTs) and of the four
	// applies' requests.
	waitFor(t, "the spans of every apply", func() bool {
		puts, applies := 0, 0
		for _, s := range c.Recv.Spans() {
			if s.Kind == tracepb.Span_SPAN_KIND_CLIENT && attr(s.Span, "http.request.method") == "PUT" {
				puts++
			}
			if s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "/v1/config-plans/:id" {
				applies++
			}
		}
		return puts >= 2 && applies == 4
	})

	canaries := map[string]string{
		"client secret":      tracingSecret,
		"API key":            c.Secret,
		"federation token":   tracingFedToken,
		"idempotency secret": "e2e-idempotency-secret",
		"internal token":     "e2e-internal-token",
	}
	payloads := c.Recv.Payloads()
	for what, secret := range canaries {
		for _, form := range secretForms(secret) {
			for i, p := range payloads {
				if bytes.Contains(p, []byte(form)) {
					t.Errorf("export %d holds the %s (%q)", i, what, form)
				}
			}
		}
	}
	// The scan looked at plain protobuf: strings are in it as they are.
	if !bytes.Contains(bytes.Join(payloads, nil), []byte("/v1/config-plans/:id")) {
		t.Fatal("the exports are not plain protobuf: the scan proves nothing")
	}
}

// TestTracingFlushedOnShutdown: spans still buffered when serve is told to
// stop (SIGTERM) are exported before it exits.
func TestTracingFlushedOnShutdown(t *testing.T) {
	// The batch would wait an hour: only the shutdown exports it.
	c := newTracedCluster(t, "OTEL_BSP_SCHEDULE_DELAY=3600000")
	a := c.send("GET", "/v1/config-plans", nil, map[string]string{"traceparent": "00-" + incomingTrace + "-" + incomingParent + "-01"})
	if a.Status != http.StatusOK {
		t.Fatalf("list: %d %s", a.Status, a.Body)
	}
	if n := len(c.Recv.Spans()); n != 0 {
		t.Fatalf("%d spans exported before the shutdown", n)
	}
	c.Nodes[0].Stop(t, syscall.SIGTERM)
	spans := c.Recv.Trace(incomingTrace)
	var server, sql int
	for _, s := range spans {
		switch {
		case s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "/v1/config-plans":
			server++
		case attr(s.Span, "db.system") == "postgresql":
			sql++
		}
	}
	if server != 1 || sql == 0 {
		t.Fatalf("after SIGTERM the receiver has %d server spans and %d SQL spans of the request, want 1 and some:\n%v", server, sql, spans)
	}
	if !strings.Contains(c.Nodes[0].Logs(), `"msg":"keenauthd stopped"`) {
		t.Errorf("serve did not drain:\n%s", c.Nodes[0].Logs())
	}
}

// TestTracingOffWithoutEndpoint: without OTEL_EXPORTER_OTLP_ENDPOINT and
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT no exporter runs, whatever other
// OTEL_* variables say: nothing reaches a receiver on the exporter's
// default address (127.0.0.1:4318), and the log lines carry no span_id
// (the trace_id of an incoming traceparent stays).
func TestTracingOffWithoutEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:4318")
	if err != nil {
		t.Skipf("the OTLP/HTTP default port is taken (%v): cannot watch it", err)
	}
	recv := newOTLPReceiver(t, ln)
	c := newCluster(t, 1, "OTEL_SERVICE_NAME=keenauthd-off", "OTEL_TRACES_SAMPLER=always_on", "OTEL_BSP_SCHEDULE_DELAY=10")
	a := c.do(c.Nodes[0], "GET", "/v1/config-plans", nil, "")
	if a.Status != http.StatusOK {
		t.Fatalf("list: %d %s", a.Status, a.Body)
	}
	req, _ := http.NewRequest("GET", c.Nodes[0].URL+"/v1/config-plans", nil)
	req.Header.Set("Authorization", "Bearer "+c.Secret)
	req.Header.Set("traceparent", "00-"+incomingTrace+"-"+incomingParent+"-01")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	reqID := resp.Header.Get("Request-Id")
	c.Nodes[0].Stop(t, syscall.SIGTERM)
	if n := len(recv.Payloads()); n != 0 {
		t.Fatalf("%d exports reached the default OTLP address without an endpoint set", n)
	}
	found := false
	for _, l := range logRecords(c.Nodes[0].Logs()) {
		if _, ok := l["span_id"]; ok {
			t.Errorf("log line with a span_id while not tracing: %v", l)
		}
		if l["request_id"] == reqID && l["msg"] == "request" {
			found = true
			if l["trace_id"] != incomingTrace {
				t.Errorf("access line %v: want the traceparent's trace_id", l)
			}
		}
	}
	if !found {
		t.Fatalf("no access line for %s", reqID)
	}
}

// Headers returns the headers of the exports received so far.
func (r *otlpReceiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// TestTracingHonoursTheStandardVariables: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// is used as it is, OTEL_EXPORTER_OTLP_HEADERS go with every export, and
// OTEL_TRACES_SAMPLER decides: with parentbased_traceidratio at 0 a request
// without traceparent is not exported, one with a sampled traceparent is.
// The log lines of both carry their trace and span ids.
func TestTracingHonoursTheStandardVariables(t *testing.T) {
	recv := newOTLPReceiver(t, nil)
	recv.path = "/collector/traces"
	c := newCluster(t, 1,
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+recv.URL()+"/collector/traces",
		"OTEL_EXPORTER_OTLP_HEADERS=x-collector-token=t0ken",
		"OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0")
	unsampled := c.do(c.Nodes[0], "GET", "/v1/config-plans", nil, "")
	req, _ := http.NewRequest("GET", c.Nodes[0].URL+"/v1/config-plans", nil)
	req.Header.Set("Authorization", "Bearer "+c.Secret)
	req.Header.Set("traceparent", "00-"+incomingTrace+"-"+incomingParent+"-01")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if unsampled.Status != http.StatusOK || resp.StatusCode != http.StatusOK {
		t.Fatalf("lists: %d, %d", unsampled.Status, resp.StatusCode)
	}
	c.Nodes[0].Stop(t, syscall.SIGTERM)

	ids := map[string]bool{}
	for _, s := range recv.Spans() {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			ids[attr(s.Span, "keenauth.request_id")] = true
			if got := hex.EncodeToString(s.TraceId); got != incomingTrace {
				t.Errorf("exported server span of trace %s, want only the sampled traceparent's", got)
			}
		}
	}
	sampledID, unsampledID := resp.Header.Get("Request-Id"), unsampled.Header.Get("Request-Id")
	if !ids[sampledID] || ids[unsampledID] {
		t.Fatalf("server spans of %v; want %s (sampled parent) and not %s (ratio 0)", ids, sampledID, unsampledID)
	}
	for _, h := range recv.Headers() {
		if h.Get("X-Collector-Token") != "t0ken" {
			t.Errorf("an export without OTEL_EXPORTER_OTLP_HEADERS' header: %v", h)
		}
	}
	for _, l := range logRecords(c.Nodes[0].Logs()) {
		if l["msg"] == "request" && (l["request_id"] == sampledID || l["request_id"] == unsampledID) {
			if tid, _ := l["trace_id"].(string); len(tid) != 32 {
				t.Errorf("access line without trace_id: %v", l)
			}
			if sid, _ := l["span_id"].(string); len(sid) != 16 {
				t.Errorf("access line without span_id: %v", l)
			}
		}
	}
}

// TestTracingKeepsTheBodyLimits: the server span's wrappers of the request
// body and the response writer leave the body deadline (408, set through
// the connection's ResponseController) and the size limit (413) as they
// are, and those answers are spans too.
func TestTracingKeepsTheBodyLimits(t *testing.T) {
	c := newTracedCluster(t, "OTEL_BSP_SCHEDULE_DELAY=50", "KEENAUTHD_BODY_READ_TIMEOUT=1s")
	raw := func(header string, body string) string {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(c.Nodes[0].URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(conn, header+"Authorization: Bearer "+c.Secret+"\r\nContent-Type: application/json\r\n\r\n"+body); err != nil {
			t.Fatal(err)
		}
		status := make([]byte, 12)
		if _, err := io.ReadFull(conn, status); err != nil {
			t.Fatalf("no answer: %v", err)
		}
		return string(status[9:12])
	}
	// A body that stops arriving: 408 once its deadline passes.
	if got := raw("POST /v1/config-plans HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n", `{"config": `); got != "408" {
		t.Fatalf("stalled body: %s, want 408", got)
	}
	// A body over the limit by its Content-Length: 413, unread.
	if got := raw("POST /v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n", ""); got != "413" {
		t.Fatalf("body over the limit: %s, want 413", got)
	}
	waitFor(t, "the spans of the 408 and the 413", func() bool {
		seen := map[string]bool{}
		for _, s := range c.Recv.Spans() {
			if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
				seen[s.Name+" "+attr(s.Span, "http.response.status_code")] = true
			}
		}
		return seen["/v1/config-plans 408"] && seen["/v1/config-plans/:id 413"]
	})
}
