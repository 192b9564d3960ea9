// Package apitest runs the real router over a test's own PostgreSQL
// database and Redis key prefix, with a fake federation service, for
// table-driven API tests.
//
// KEENAUTH_TEST_BACKEND=embedded runs the same tests over the storage of
// `keenauthd dev` instead: a SQLite file of the test's own and the in-process
// idempotency and rate-limit stores (the fake federation service stays, so
// tests can assert on it). Tests that need PostgreSQL or Redis themselves
// call e.RequirePostgres or e.RequireRedis.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/metrics"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/ratelimit"
	"github.com/keenauth/configplans/service"
	"github.com/keenauth/configplans/test/fakefederation"
	"github.com/keenauth/configplans/test/testdb"
)

// FederationToken is the bearer the fake federation service expects.
const FederationToken = "fed-test-token"

// InternalToken is the bearer of the internal endpoints in tests.
const InternalToken = "internal-test-token"

// Clock is a settable clock for tests; it starts at the real time.
type Clock struct {
	mu  sync.Mutex
	off time.Duration
}

// Now returns the real time shifted by the clock's offset.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// Backends of the harness (KEENAUTH_TEST_BACKEND).
const (
	BackendPostgres = "postgres" // PostgreSQL and Redis, as production runs (the default)
	BackendEmbedded = "embedded" // SQLite and in-process stores, as `keenauthd dev` runs
)

// Backend returns the backend the tests run on.
func Backend() string {
	switch v := os.Getenv("KEENAUTH_TEST_BACKEND"); v {
	case "", BackendPostgres:
		return BackendPostgres
	case BackendEmbedded:
		return BackendEmbedded
	default:
		panic("apitest: KEENAUTH_TEST_BACKEND=" + v + ": want postgres or embedded")
	}
}

// Embedded reports whether the tests run on the embedded backend.
func Embedded() bool { return Backend() == BackendEmbedded }

// Options change the harness.
type Options struct {
	RateLimit ratelimit.Config // zero: a quota high enough not to interfere
	// PreviewRateLimit sets the config_preview limits (zero: the defaults,
	// 120 per 60 s and 4 at once).
	PreviewRateLimit ratelimit.Config
	FleetLimit       int
	Plans            plans.Config // zero: the defaults
	Hooks            plans.Hooks
	// DB are the storage's options: its retries, their observer, and the
	// seam that writes inside an apply's transaction (BeforeApplyWrite).
	DB configdb.Options
	// NoFederation leaves the federation service unconfigured
	// (federation.Unconfigured).
	NoFederation bool
	// Federation, when set, is the federation client instead of one to
	// the fake federation service.
	Federation federation.Client
	// Database reuses another harness's database (several instances).
	Database *testdb.Database
	// Redis and Prefix reuse another harness's Redis key space.
	Redis  *redis.Client
	Prefix string
	// Cluster, with Prefix, runs the idempotency and rate-limit stores on a
	// Redis Cluster instead of Redis.
	Cluster redis.UniversalClient
	// Replica starts a second instance over the same database, Redis key
	// space, environment, key and clock as another harness (several
	// keenauthd replicas).
	Replica *Env
	// Metrics registers the instance's collectors and serves /metrics.
	Metrics bool
	// Streams are the live event stream's settings (zero: the defaults).
	Streams service.StreamSettings
	// On the embedded backend, Replica and Redis skip the test: replicas
	// need PostgreSQL and Redis. Database (another environment's SQLite
	// file) is shared as on PostgreSQL.
}

// Env is one running API over its own database.
type Env struct {
	T       testing.TB
	DB      *testdb.Database // on the embedded backend, a SQLite file (URL empty)
	Domain  *plans.Domain
	Handler http.Handler
	Clock   *Clock
	Fed     *fakefederation.Server
	Redis   *redis.Client // nil on the embedded backend, and with Options.Cluster
	Cluster redis.UniversalClient
	Prefix  string
	Logs    *SyncBuffer
	// EnvID and Secret are an environment and a key holding every permission.
	EnvID  string
	Secret string
	// Metrics are the instance's collectors (Options.Metrics), served on /metrics.
	Metrics *metrics.Metrics
}

// SyncBuffer is a goroutine-safe log sink.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Setup starts the API for t.
func Setup(t testing.TB, opt Options) *Env {
	t.Helper()
	e := &Env{T: t, Clock: &Clock{}, Logs: &SyncBuffer{}}
	embedded := Embedded()
	if embedded && opt.Replica != nil {
		t.Skip("needs PostgreSQL/Redis: replicas over one database and Redis")
	}
	if embedded && (opt.Redis != nil || opt.Cluster != nil) {
		t.Skip("needs PostgreSQL/Redis: runs against a Redis of its own")
	}
	if r := opt.Replica; r != nil {
		opt.Database, opt.Redis, opt.Prefix, opt.Cluster = r.DB, r.Redis, r.Prefix, r.Cluster
		e.Clock = r.Clock
	}
	e.DB = opt.Database
	switch {
	case e.DB != nil:
	case embedded:
		e.DB = testdb.NewSQLite(t)
	default:
		e.DB = testdb.New(t)
		if testdb.ThroughPgBouncer() {
			e.DB = testdb.StartPgBouncer(t).Through(t, e.DB)
		}
	}
	e.Redis, e.Prefix, e.Cluster = opt.Redis, opt.Prefix, opt.Cluster
	if e.Redis == nil && e.Cluster == nil && !embedded {
		e.Redis, e.Prefix = testdb.Redis(t)
	}
	var stores redis.UniversalClient = e.Redis
	if e.Cluster != nil {
		stores = e.Cluster
	}
	log := service.NewLogger(e.Logs, slog.LevelDebug)
	hooks, dbOpts, fed := opt.Hooks, opt.DB, opt.Federation
	switch {
	case fed != nil:
	case opt.NoFederation:
		fed = federation.Unconfigured{}
	default:
		e.Fed = fakefederation.New(FederationToken)
		t.Cleanup(e.Fed.Close)
		fed = federation.NewHTTPClient(federation.HTTPConfig{BaseURL: e.Fed.URL(), Token: FederationToken,
			Timeout: 2 * time.Second, Backoff: 10 * time.Millisecond})
	}
	pc := opt.Plans
	if pc.PlanTTL == 0 {
		pc = plans.DefaultConfig()
	}
	if opt.Metrics {
		e.Metrics = metrics.New()
		hooks, dbOpts, fed = e.Metrics.Plans(hooks), e.Metrics.Storage(dbOpts), e.Metrics.Federation(fed)
	}
	rl := opt.RateLimit
	if rl.Quota == 0 {
		rl.Quota, rl.Inflight = 100000, 1000
	}
	fleet := opt.FleetLimit
	if fleet == 0 {
		fleet = 1000
	}
	st := service.Settings{Plans: pc, PlanHooks: hooks, RateLimit: rl, PreviewRateLimit: opt.PreviewRateLimit,
		// The fleet's lease and call timeout of the tests: short enough
		// that a Redis fault shows quickly.
		FleetLimit: fleet, FleetLease: 2 * time.Minute, FleetCallTimeout: 150 * time.Millisecond,
		IdempotencySecret: []byte("test-idempotency-secret"), IdempotencyLease: 10 * time.Second,
		InternalToken: InternalToken, Log: log, Streams: opt.Streams}
	if rl.CallTimeout > 0 {
		st.FleetCallTimeout = rl.CallTimeout
	}
	if e.Metrics != nil {
		st.Metrics, st.Hooks = e.Metrics.Handler(), e.Metrics.Service()
	}
	// On the embedded backend, the idempotency records and rate limits are
	// kept in the process, on the real time as Redis's TIME is on the other
	// backend: the test clock moves plans, not them.
	b := service.Backend{DB: configdb.New(e.DB.DB, e.Clock.Now, dbOpts), Federation: fed}
	if !embedded {
		b.Redis, b.Prefix = stores, e.Prefix
	}
	w := service.Wire(b, st)
	e.Domain, e.Handler = w.Domain, w.Handler
	if b.Redis != nil {
		// The live streams hear the events of the other replicas.
		followCtx, stop := context.WithCancel(context.Background())
		t.Cleanup(stop)
		go w.Events.Follow(followCtx)
	}
	if r := opt.Replica; r != nil {
		e.EnvID, e.Secret = r.EnvID, r.Secret
		return e
	}
	env, err := e.Domain.Environments.CreateEnvironment(context.Background(), "Shop")
	if err != nil {
		t.Fatalf("create environment: %v", err)
	}
	e.EnvID = env.ID
	e.Secret = e.Key(config.AllPermissions()...)
	return e
}

// RequirePostgres skips the test on the embedded backend: it needs
// PostgreSQL itself (its SQL, pg_dump, a connection of its own).
func (e *Env) RequirePostgres() {
	e.T.Helper()
	if Embedded() {
		e.T.Skip("needs PostgreSQL/Redis: runs on the postgres backend only")
	}
}

// RequireRedis skips the test on the embedded backend: it needs Redis
// itself (its keys, its clock, its failures).
func (e *Env) RequireRedis() {
	e.T.Helper()
	if Embedded() {
		e.T.Skip("needs PostgreSQL/Redis: runs on the postgres backend only")
	}
}

// Key creates an API key of the environment holding perms.
func (e *Env) Key(perms ...string) string {
	e.T.Helper()
	k, err := e.Domain.Keys.CreateKey(context.Background(), e.EnvID, perms)
	if err != nil {
		e.T.Fatalf("create key: %v", err)
	}
	return k.Secret
}

// GormDB returns the test's database handle.
func (e *Env) GormDB() *gorm.DB { return e.DB.DB }

// Response is a recorded answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map.
func (r *Response) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Code is the problem code of the answer ("" for a success).
func (r *Response) Code() string {
	c, _ := r.JSON()["code"].(string)
	return c
}

// Decode decodes the body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Request is one request to send.
type Request struct {
	Method string
	Path   string
	// Body is sent as is when a string or []byte, else encoded as JSON (nil: none).
	Body   any
	Secret string // "" uses the all-permissions key; "-" sends none
	Header map[string]string
}

// Do sends a request through the router.
func (e *Env) Do(r Request) *Response {
	e.T.Helper()
	var body io.Reader
	switch b := r.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.T.Fatalf("encode body: %v", err)
		}
		body = bytes.NewReader(j)
	}
	req := httptest.NewRequest(r.Method, r.Path, body)
	switch r.Secret {
	case "":
		req.Header.Set("Authorization", "Bearer "+e.Secret)
	case "-":
	default:
		req.Header.Set("Authorization", "Bearer "+r.Secret)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.Handler.ServeHTTP(rec, req)
	resp := &Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	checkContract(e.T, req, resp)
	return resp
}

// Plan creates a plan of doc (the config member) and fails t unless 201.
func (e *Env) Plan(doc any, prune bool) map[string]any {
	e.T.Helper()
	r := e.Do(Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": doc, "prune": prune}})
	if r.Status != http.StatusCreated {
		e.T.Fatalf("create plan: %d %s", r.Status, r.Body)
	}
	return r.JSON()
}

// Apply applies a plan with body and fails t unless 200.
func (e *Env) Apply(planID string, body any) map[string]any {
	e.T.Helper()
	r := e.Do(Request{Method: "POST", Path: "/v1/config-plans/" + planID + ":apply", Body: body})
	if r.Status != http.StatusOK {
		e.T.Fatalf("apply %s: %d %s", planID, r.Status, r.Body)
	}
	return r.JSON()
}

// Export returns the current configuration document and versions.
func (e *Env) Export() (map[string]any, map[string]any) {
	e.T.Helper()
	r := e.Do(Request{Method: "GET", Path: "/v1/config"})
	if r.Status != http.StatusOK {
		e.T.Fatalf("export: %d %s", r.Status, r.Body)
	}
	m := r.JSON()
	cfg, _ := m["config"].(map[string]any)
	vers, _ := m["versions"].(map[string]any)
	return cfg, vers
}

// ExampleDocument is the document of SPEC §4 (without the deletion).
func ExampleDocument() map[string]any {
	var m map[string]any
	_ = json.Unmarshal([]byte(`{
  "environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 72},
  "connections": {
    "legacy":   null,
    "acme-sso": {"type": "enterprise", "display_name": "ACME", "active": false,
                 "oidc": {"issuer": "https://idp.acme.example", "client_id": "abc", "scopes": ["openid", "email"]}},
    "github":   {"type": "social", "display_name": "GitHub", "active": true,
                 "social": {"provider": "github", "use_own_credentials": false}}
  },
  "apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
                      "scopes": [{"value": "read:orders", "description": "Read orders"}],
                      "token_lifetime_seconds": 3600}},
  "applications": {"portal": {"display_name": "Portal", "type": "regular_web",
                   "callback_urls": ["https://portal.shop.example/callback"],
                   "connections": ["acme-sso"], "api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}}
}`), &m)
	return m
}
