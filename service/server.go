package service

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/idempotency"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/ratelimit"
)

// Deps are what the HTTP layer is built on.
type Deps struct {
	// Domain is what the API serves; its parts (Plans, Keys, Revisions…)
	// are fields of Deps.
	*plans.Domain
	// Idempotency stores Idempotency-Key records; IdempotencySecret keys
	// their fingerprints; IdempotencyLease is the in-flight lease.
	Idempotency       idempotency.Store
	IdempotencySecret []byte
	IdempotencyLease  time.Duration
	Limiter           ratelimit.Limiter
	Fleet             ratelimit.Fleet
	RateLimit         ratelimit.Config
	// PreviewLimiter admits the previews of plan creation under the
	// config_preview policies of PreviewRateLimit (§14).
	PreviewLimiter   ratelimit.Limiter
	PreviewRateLimit ratelimit.Config
	InternalToken    string
	Log              *slog.Logger
	// Ready reports whether the database and Redis can be reached.
	Ready func(ctx context.Context) error
	// Draining reports that the process is shutting down (/readyz says so).
	Draining func() bool
	// Metrics, when set, serves /metrics.
	Metrics http.Handler
	// Hooks observe requests, idempotency and admission (metrics).
	Hooks Hooks
	// HTTP are the timeouts of the server, which must be configured with
	// the same (HTTPLimits.Configure); zero values mean the defaults.
	HTTP HTTPLimits
	// Bodies is the budget of large request bodies (nil: the default).
	Bodies *BodyBudget
	// Events wakes the live streams; Streams are their settings (§19).
	Events  *EventHub
	Streams StreamSettings
}

// Server is the HTTP API.
type Server struct {
	d       Deps
	limits  HTTPLimits
	bodies  *BodyBudget
	streams StreamSettings
}

// New builds the router.
func New(d Deps) *gin.Engine {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.IdempotencyLease <= 0 {
		d.IdempotencyLease = 2 * time.Minute
	}
	s := &Server{d: d, limits: d.HTTP.WithDefaults(), bodies: d.Bodies, streams: d.Streams.WithDefaults()}
	if s.bodies == nil {
		s.bodies = NewBodyBudget(0, 0)
	}
	if s.d.Events == nil {
		s.d.Events = NewEventHub(nil, "", d.Log)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// A path with a trailing slash is unknown (404 problem) rather than
	// redirected: Gin's redirect skips the middleware, so it would carry no
	// Request-Id or Cache-Control, and would turn a POST into a 307.
	r.RedirectTrailingSlash = false
	r.ContextWithFallback = true
	r.Use(s.requestID, s.observe, s.recover, s.checkFraming, s.holdBody, s.refuseWhileDraining)
	r.NoRoute(func(c *gin.Context) {
		noStoreV1(c)
		if consolePath(c.Request.URL.Path) {
			consoleHeaders(c)
		}
		s.write(c, problemResponse(&config.Error{Code: config.CodeNotFound, Detail: "no such path"}, requestID(c)))
	})
	r.NoMethod(func(c *gin.Context) {
		noStoreV1(c)
		if consolePath(c.Request.URL.Path) {
			consoleHeaders(c)
		}
		s.write(c, problemResponse(&config.Error{Code: config.CodeMethodNotAllowed, Detail: "the path does not support " + c.Request.Method}, requestID(c)))
	})

	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", s.readyz)
	if d.Metrics != nil {
		r.GET("/metrics", gin.WrapH(d.Metrics))
	}

	r.GET("/", s.rootRedirect)
	r.GET("/console", withConsoleHeaders, s.consoleRedirect)
	r.GET("/console/*path", withConsoleHeaders, s.consolePage)

	v1 := r.Group("/v1", noStore)
	v1.GET("/openapi.json", s.openapi)
	v1.GET("/config-schema.json", s.configSchema)
	api := v1.Group("", s.authenticate)
	api.GET("/config", s.exportConfig)
	api.POST("/config-plans", s.createPlan)
	api.GET("/config-plans", s.listPlans)
	api.GET("/config-plans/:id", s.getPlan)
	api.POST("/config-plans/:id", s.planAction)
	api.GET("/config-plans/:id/events", s.listEvents)
	api.GET("/config-revisions", s.listRevisions)
	api.GET("/config-revisions/:id", s.getRevision)
	api.GET("/config-revisions/:id/diff", s.diffRevision)
	api.POST("/config-revisions/:id", s.revisionAction)
	api.POST("/connections/:key", s.connectionAction)
	api.GET("/management-logs", s.listLogs)
	api.GET("/api-keys/current", s.currentKey)
	api.GET("/config-policies", s.getPolicies)
	api.GET("/config-events", s.listConfigEvents)
	api.GET("/config-events/stream", s.streamConfigEvents)
	// Webhooks (§19).
	api.POST("/webhook-endpoints", s.createEndpoint)
	api.GET("/webhook-endpoints", s.listEndpoints)
	api.GET("/webhook-endpoints/:id", s.getEndpoint)
	api.PATCH("/webhook-endpoints/:id", s.patchEndpoint)
	api.DELETE("/webhook-endpoints/:id", s.deleteEndpoint)
	api.POST("/webhook-endpoints/:id", s.endpointAction)
	api.GET("/webhook-endpoints/:id/deliveries", s.endpointDeliveries)
	api.POST("/webhook-endpoints/:id/deliveries/:msg_id", s.deliveryAction)

	internal := r.Group("/internal/v1", noStore, s.internalAuth)
	internal.POST("/token-activity", s.tokenActivity)
	internal.PUT("/environments/:id/policies", s.putPolicies)
	return r
}

// requestID gives every request a Request-Id (see startRequest).
func (s *Server) requestID(c *gin.Context) {
	id := s.startRequest(c)
	c.Header("Request-Id", id)
	c.Next()
}

func requestID(c *gin.Context) string { return c.GetString("request_id") }

// recover turns a panic into a 500 problem, logged in full.
func (s *Server) recover(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.d.Log.ErrorContext(c, "panic", "request_id", requestID(c), "panic", v)
			if !c.Writer.Written() {
				s.write(c, problemResponse(errors.New("panic"), requestID(c)))
			}
			c.Abort()
		}
	}()
	c.Next()
}

func noStore(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.Next()
}

// noStoreV1 marks an answer under /v1 that no route group handled (404,
// 405): every /v1 response carries Cache-Control: no-store.
func noStoreV1(c *gin.Context) {
	if p := c.Request.URL.Path; p == "/v1" || strings.HasPrefix(p, "/v1/") {
		c.Header("Cache-Control", "no-store")
	}
}

// problemCodeKey holds, in the Gin context, the code of the problem
// answered, for the access log.
const problemCodeKey = "problem_code"

// write sends a response; errors that are not the contract's are logged.
// An answer given before the body was read closes the connection.
//
// The answer carries its Content-Length, so that observe can send it
// before the access log line (see sendAnswer), and so that an answer over
// net/http's 2 KiB buffer is not sent chunked.
func (s *Server) write(c *gin.Context, r response) {
	h := c.Writer.Header()
	if bodyUnread(c) {
		h.Set("Connection", "close")
		s.closeEarly(c)
	}
	if r.code != "" {
		c.Set(problemCodeKey, string(r.code))
	}
	for k, vs := range r.header {
		// A response's header is its own and its keys are canonical (set
		// by http.Header's methods or written so): its values are taken
		// as they are, not copied one by one.
		if len(h[k]) == 0 {
			h[k] = vs
		} else {
			h[k] = append(h[k], vs...)
		}
	}
	if r.stream != nil {
		// No Content-Length: the answer is sent chunked as it is encoded.
		// A client that goes away ends it.
		c.Status(r.status)
		_ = r.stream.WriteJSON(c.Writer)
		c.Abort()
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(r.body)))
	c.Status(r.status)
	_, _ = c.Writer.Write(r.body)
	c.Abort()
}

// fail answers err as a problem; unknown errors are logged in full.
func (s *Server) fail(c *gin.Context, err error) {
	s.write(c, s.errorResponse(c, err))
}

func (s *Server) errorResponse(c *gin.Context, err error) response {
	if _, known := toError(err); !known {
		s.d.Log.ErrorContext(c, "request failed", "request_id", requestID(c), "error", err)
	} else if cause := plans.UnavailableCause(err); cause != "" {
		s.d.Log.WarnContext(c, "service unavailable", "request_id", requestID(c), "cause", cause, "error", err)
	}
	return problemResponse(err, requestID(c))
}

func (s *Server) authenticate(c *gin.Context) {
	h := c.GetHeader("Authorization")
	secret, ok := bearer(h)
	if !ok {
		s.fail(c, plans.ErrUnauthenticated)
		return
	}
	a, err := s.d.Keys.Authenticate(c.Request.Context(), strings.TrimSpace(secret))
	if err != nil {
		s.fail(c, err)
		return
	}
	a.RequestID = requestID(c)
	c.Set("actor", a)
	c.Set("environment_id", a.EnvironmentID)
	c.Set("api_key_id", a.APIKeyID)
	c.Next()
}

// bearer returns the credentials of an Authorization header of the Bearer
// scheme, whose name is case-insensitive (RFC 9110 §11.1).
func bearer(h string) (string, bool) {
	scheme, credentials, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return credentials, true
}

func actor(c *gin.Context) plans.Actor {
	a, _ := c.Get("actor")
	return a.(plans.Actor)
}

func (s *Server) internalAuth(c *gin.Context) {
	secret, ok := bearer(c.GetHeader("Authorization"))
	if !ok || s.d.InternalToken == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(s.d.InternalToken)) != 1 {
		s.fail(c, plans.ErrUnauthenticated)
		return
	}
	c.Next()
}

// listParams reads ?limit=1..100 (default 20) and ?cursor=.
func listParams(c *gin.Context, prefix string) (plans.ListParams, error) {
	lp := plans.ListParams{Limit: 20, Cursor: c.Query("cursor")}
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return lp, &config.Error{Code: config.CodeMalformedRequest, Detail: "limit must be a whole number from 1 to 100"}
		}
		lp.Limit = n
	}
	if _, ok := c.GetQuery("cursor"); ok && !config.ValidID(prefix, lp.Cursor) {
		return lp, &config.Error{Code: config.CodeMalformedRequest, Detail: "cursor is not valid: pass next_cursor of the previous page"}
	}
	return lp, nil
}

func (s *Server) readyz(c *gin.Context) {
	if s.d.Draining != nil && s.d.Draining() {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "draining"})
		return
	}
	if s.d.Ready != nil {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
		defer cancel()
		if err := s.d.Ready(ctx); err != nil {
			c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "detail": err.Error()})
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}
