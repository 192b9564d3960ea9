package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/idempotency"
	"github.com/keenauth/configplans/ratelimit"
)

// Hooks are optional observers of the HTTP layer (metrics). Every value
// they are given comes from a fixed set: never an id, a key or a path.
type Hooks struct {
	// OnRequestStart and OnRequest bracket every request; route is the
	// route's template ("unmatched" when no route matched).
	OnRequestStart func()
	OnRequest      func(method, route string, status int, d time.Duration)
	// OnIdempotency is told how an Idempotency-Key was handled: claimed,
	// replayed, mismatch, in_use or store_unavailable.
	OnIdempotency func(outcome string)
	// OnRateLimit is told of every rate-limit decision: allowed, limited
	// (with the denying policy) or failed_open.
	OnRateLimit func(decision, policy string)
	// OnFleetSaturated is told when the fleet's apply capacity refused a request.
	OnFleetSaturated func()
	// OnLeaseLost is told when a lease could not be renewed while its
	// request ran: "idempotency", "inflight" or "fleet".
	OnLeaseLost func(lease string)
}

// requestInfo identifies the request a context belongs to, for the logs.
type requestInfo struct {
	id, traceID string
}

type requestInfoKey struct{}

// traceparent is a W3C Trace Context header: version, trace id, parent id,
// flags (a later version may append fields after a "-").
var traceparent = regexp.MustCompile(`^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$`)

// traceID returns the trace id of a well-formed traceparent header ("" if
// there is none or it is not valid).
func traceID(h string) string {
	if h == "" {
		return ""
	}
	m := traceparent.FindStringSubmatch(h)
	if m == nil || m[1] == "ff" || (m[1] == "00" && m[5] != "") ||
		m[2] == strings.Repeat("0", 32) || m[3] == strings.Repeat("0", 16) {
		return ""
	}
	return m[2]
}

// startRequest gives the request its Request-Id: a well-formed incoming
// one (req_ and a ULID) is kept, otherwise a new one is made. A W3C
// traceparent does not make the Request-Id (one trace spans many requests,
// which must keep ids of their own); its trace id goes into the logs as
// trace_id. Both ride on the request's context, so that every log line of
// the request carries them.
func (s *Server) startRequest(c *gin.Context) string {
	id := c.GetHeader("Request-Id")
	if !config.ValidID(config.PrefixRequest, id) {
		id = config.NewID(config.PrefixRequest)
	}
	info := requestInfo{id: id, traceID: traceID(c.GetHeader("traceparent"))}
	c.Set("request_id", id)
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), requestInfoKey{}, info))
	traceRequest(c, id)
	return id
}

// requestIDAttribute is the attribute of a request's span that holds its
// Request-Id.
const requestIDAttribute = "keenauth.request_id"

// traceRequest completes the request's server span, when serve traces
// (the span is otelhttp's, started around the router before a route was
// known): it is named by the route template, with http.route, and carries
// the Request-Id. An unmatched request keeps otelhttp's name, its method.
func traceRequest(c *gin.Context, id string) {
	span := trace.SpanFromContext(c.Request.Context())
	if !span.IsRecording() {
		return
	}
	if r := c.FullPath(); r != "" {
		span.SetName(r)
		span.SetAttributes(semconv.HTTPRoute(r), attribute.String(requestIDAttribute, id))
		return
	}
	span.SetAttributes(attribute.String(requestIDAttribute, id))
}

// probe reports whether a path is one of the operator's endpoints, which
// answer while the process drains and are logged at debug level.
func probe(path string) bool {
	return path == "/healthz" || path == "/readyz" || path == "/metrics"
}

// observe writes one access log line per request and tells the metrics.
// The line never holds a request body: method, route template, status,
// duration, the request's ids and the ids of the plan or revision it is
// about.
//
// The line is written once the answer has left (sendAnswer): the client
// does not wait for the log's write. The metrics are told before.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	if s.d.Hooks.OnRequestStart != nil {
		s.d.Hooks.OnRequestStart()
	}
	finished := false
	defer func() {
		// A panic that net/http answers itself (http.ErrAbortHandler)
		// passes through here: its request is logged all the same.
		if !finished {
			d := time.Since(start)
			s.countRequest(c, d)
			s.logRequest(c, d)
		}
	}()
	c.Next()
	finished = true
	// The metrics count the request before the client has its answer (a
	// scrape right after it sees it); the log line waits.
	d := time.Since(start)
	s.countRequest(c, d)
	sendAnswer(c)
	s.logRequest(c, d)
}

// sendAnswer sends the client an answer that write made whole (with its
// Content-Length) instead of leaving it in net/http's buffer until the
// handler returns. It runs when every middleware and handler has returned,
// so that what a request holds — its in-flight slot, its fleet slot, its
// body's budget — is given back before the client has the answer and can
// send the next request.
func sendAnswer(c *gin.Context) {
	if c.Writer.Written() && c.Writer.Header().Get("Content-Length") != "" {
		c.Writer.Flush()
	}
}

// route is the route template of a request, "unmatched" when no route
// matched.
func route(c *gin.Context) string {
	if r := c.FullPath(); r != "" {
		return r
	}
	return "unmatched"
}

// countRequest tells the metrics of a request that took d.
func (s *Server) countRequest(c *gin.Context, d time.Duration) {
	if s.d.Hooks.OnRequest != nil {
		s.d.Hooks.OnRequest(c.Request.Method, route(c), c.Writer.Status(), d)
	}
}

// logRequest writes the access log line of a request that took d.
func (s *Server) logRequest(c *gin.Context, d time.Duration) {
	route := route(c)
	status := c.Writer.Status()
	// Room for every attribute of a line, so that it is not grown.
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String("method", c.Request.Method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("duration_ms", math.Round(float64(d.Microseconds()))/1000),
		slog.String("request_id", requestID(c)),
	)
	if route == "unmatched" {
		attrs = append(attrs, slog.String("path", c.Request.URL.Path))
	}
	for _, k := range []string{"environment_id", "api_key_id"} {
		if v := c.GetString(k); v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	if id := resourceID(c, "/v1/config-plans/:id", config.PrefixPlan); id != "" {
		attrs = append(attrs, slog.String("plan_id", id))
	}
	if id := resourceID(c, "/v1/config-revisions/:id", config.PrefixRevision); id != "" {
		attrs = append(attrs, slog.String("revision_id", id))
	}
	if code := c.GetString(problemCodeKey); code != "" {
		attrs = append(attrs, slog.String("code", code))
	}
	if c.Writer.Header().Get("Idempotent-Replayed") == "true" {
		attrs = append(attrs, slog.Bool("replayed", true))
	}
	level := slog.LevelInfo
	switch {
	case probe(c.Request.URL.Path) && status < 500:
		level = slog.LevelDebug
	case status == http.StatusInternalServerError:
		level = slog.LevelError
	case status >= 500:
		level = slog.LevelWarn
	}
	s.d.Log.LogAttrs(c.Request.Context(), level, "request", attrs...)
}

// resourceID returns the id of the plan (or revision) a request is about:
// the {id} of its route (without a custom verb), else the plan a 201 made
// (its Location). Only a well-formed id is returned.
func resourceID(c *gin.Context, route, prefix string) string {
	if c.FullPath() == route || strings.HasPrefix(c.FullPath(), route+"/") {
		id, _, _ := strings.Cut(c.Param("id"), ":")
		if config.ValidID(prefix, id) {
			return id
		}
	}
	if id, ok := strings.CutPrefix(c.Writer.Header().Get("Location"), strings.TrimSuffix(route, ":id")); ok && config.ValidID(prefix, id) {
		return id
	}
	return ""
}

// problemCodeFormat is the form of a code: a stored answer's code is
// checked against it before it reaches the access log.
var problemCodeFormat = regexp.MustCompile(`^[a-z_]{1,64}$`)

// refuseWhileDraining answers 503 to every request but the operator's
// endpoints once the process drains: the requests already running finish,
// new ones go to another replica.
func (s *Server) refuseWhileDraining(c *gin.Context) {
	if s.d.Draining == nil || !s.d.Draining() || probe(c.Request.URL.Path) {
		c.Next()
		return
	}
	c.Header("Connection", "close")
	if consolePath(c.Request.URL.Path) {
		consoleHeaders(c)
	}
	// The route groups that set no-store do not run: every /v1 and internal
	// answer is no-store.
	c.Header("Cache-Control", "no-store")
	s.fail(c, &config.Error{Code: config.CodeServiceUnavailable, Detail: "the server is shutting down; retry the request",
		Extra: map[string]any{"retry_after": 1}})
}

// Hook calls of the idempotency and admission guards.

func (s *Server) observeIdempotency(outcome string) {
	if s.d.Hooks.OnIdempotency != nil {
		s.d.Hooks.OnIdempotency(outcome)
	}
}

func (s *Server) observeClaim(o idempotency.Outcome) {
	switch o {
	case idempotency.Claimed:
		s.observeIdempotency("claimed")
	case idempotency.Replay:
		s.observeIdempotency("replayed")
	case idempotency.Mismatch:
		s.observeIdempotency("mismatch")
	case idempotency.InUse:
		s.observeIdempotency("in_use")
	}
}

func (s *Server) observeRateLimit(d ratelimit.Decision) {
	if s.d.Hooks.OnRateLimit == nil {
		return
	}
	switch {
	case d.FailedOpen:
		s.d.Hooks.OnRateLimit("failed_open", "")
	case d.Allowed:
		s.d.Hooks.OnRateLimit("allowed", "")
	default:
		s.d.Hooks.OnRateLimit("limited", d.Policy)
	}
}

func (s *Server) observeFleetSaturated() {
	if s.d.Hooks.OnFleetSaturated != nil {
		s.d.Hooks.OnFleetSaturated()
	}
}

// leaseLost returns the onLost callback of a lease's renewals.
func (s *Server) leaseLost(lease string) func() {
	return func() {
		if s.d.Hooks.OnLeaseLost != nil {
			s.d.Hooks.OnLeaseLost(lease)
		}
	}
}

// NewLogger returns the service's logger: JSON lines at level or above. A
// record logged with a request's context carries its request_id, and the
// trace_id and span_id of its span when serve traces (else the trace_id of
// its incoming traceparent), and an error attribute is written as its
// message with the chain of its causes.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(contextHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: errorChain})})
}

// contextHandler adds the request's ids to the records logged with its
// context.
type contextHandler struct{ slog.Handler }

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx == nil {
		return h.Handler.Handle(ctx, r)
	}
	info, ok := ctx.Value(requestInfoKey{}).(requestInfo)
	// The span of the context (the request's, when serve traces) gives
	// the trace and span ids; without one, the trace id is the incoming
	// traceparent's.
	span := trace.SpanContextFromContext(ctx)
	if !ok && !span.IsValid() {
		return h.Handler.Handle(ctx, r)
	}
	// Every request logs its access line, which has its request_id: the
	// record is copied only when something is missing.
	needID, needTrace, needSpan := ok, span.IsValid() || info.traceID != "", span.IsValid()
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "request_id":
			needID = false
		case "trace_id":
			needTrace = false
		case "span_id":
			needSpan = false
		}
		return needID || needTrace || needSpan
	})
	if !needID && !needTrace && !needSpan {
		return h.Handler.Handle(ctx, r)
	}
	r = r.Clone()
	if needID {
		r.AddAttrs(slog.String("request_id", info.id))
	}
	if needTrace {
		if span.IsValid() {
			r.AddAttrs(slog.String("trace_id", span.TraceID().String()))
		} else {
			r.AddAttrs(slog.String("trace_id", info.traceID))
		}
	}
	if needSpan {
		r.AddAttrs(slog.String("span_id", span.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(as)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name)}
}

// maxCauses bounds the causes written for one error.
const maxCauses = 16

// errorChain writes an error attribute as {"message", "causes": [{"type",
// "message"}…]}: the wrapped errors, outermost first, so that a log line
// tells which error of which package failed (a driver's, a context's…).
func errorChain(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindAny {
		return a
	}
	err, ok := a.Value.Any().(error)
	if !ok || err == nil {
		return a
	}
	type cause struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	var causes []cause
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(causes) >= maxCauses {
			return
		}
		causes = append(causes, cause{Type: fmt.Sprintf("%T", e), Message: e.Error()})
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				walk(inner)
			}
		default:
			walk(errors.Unwrap(e))
		}
	}
	walk(err)
	return slog.Attr{Key: a.Key, Value: slog.GroupValue(slog.String("message", err.Error()), slog.Any("causes", causes))}
}
