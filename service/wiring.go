package service

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/idempotency"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/ratelimit"
)

// Backend is where one keenauthd keeps its state and whom it calls: its
// database, opened and migrated, the federation service (required:
// federation.Unconfigured where there is none), and the Redis of the fleet,
// which holds the idempotency records and the rate limits under Prefix.
// Without Redis they are kept in the process (dev mode: one process).
type Backend struct {
	DB         *configdb.DB
	Federation federation.Client
	Redis      redis.UniversalClient
	Prefix     string
}

// Settings are what serve, dev and the test harness choose for one
// keenauthd.
type Settings struct {
	Plans     plans.Config
	PlanHooks plans.Hooks
	RateLimit ratelimit.Config
	// PreviewRateLimit sets the config_preview limits (its Policy is set
	// by Wire).
	PreviewRateLimit ratelimit.Config
	// FleetLimit bounds the fleet's concurrent applies; FleetLease is how
	// long a slot of a replica that died stays taken, FleetCallTimeout
	// bounds each Redis call of the fleet (0: the rate limit's).
	FleetLimit        int
	FleetLease        time.Duration
	FleetCallTimeout  time.Duration
	IdempotencySecret []byte
	IdempotencyLease  time.Duration
	InternalToken     string
	Log               *slog.Logger
	Draining          func() bool
	Metrics           http.Handler // nil: no /metrics
	Hooks             Hooks
	HTTP              HTTPLimits
	Bodies            *BodyBudget
	// Streams are the live event stream's settings (§19).
	Streams StreamSettings
}

// Wired is one keenauthd: its domain, its router, and the stores
// of its rate limits (for the metrics of their fail-opens).
type Wired struct {
	Domain  *plans.Domain
	Handler *gin.Engine
	Limiter ratelimit.Limiter
	Fleet   ratelimit.Fleet
	// Events wakes the live streams; its Follow hears the other
	// processes' events (run it beside the server when there is Redis).
	Events *EventHub
}

// Wire builds one keenauthd over b: the domain (plans.New), the idempotency and
// rate-limit stores (in Redis, or in the process without it) and the
// router, whose /readyz pings the database and Redis. It is the one place
// where serve, dev and the test harness put them together.
func Wire(b Backend, s Settings) *Wired {
	w := &Wired{Domain: plans.New(b.DB, b.Federation, s.Plans, s.Log, s.PlanHooks)}
	preview := s.PreviewRateLimit
	preview.Policy = ratelimit.PolicyPreview
	if preview.CallTimeout <= 0 {
		preview.CallTimeout = s.RateLimit.CallTimeout
	}
	if preview.Lease <= 0 {
		preview.Lease = s.RateLimit.Lease
	}
	preview = preview.WithDefaults()
	d := Deps{Domain: w.Domain, IdempotencySecret: s.IdempotencySecret, IdempotencyLease: s.IdempotencyLease,
		RateLimit: s.RateLimit, PreviewRateLimit: preview, InternalToken: s.InternalToken, Log: s.Log, Draining: s.Draining,
		Metrics: s.Metrics, Hooks: s.Hooks, HTTP: s.HTTP, Bodies: s.Bodies, Ready: ready(b)}
	w.Events = NewEventHub(b.Redis, b.Prefix, s.Log)
	b.DB.OnEventsCommitted(w.Events.Committed)
	d.Events, d.Streams = w.Events, s.Streams
	if b.Redis == nil {
		d.Idempotency = idempotency.NewMemoryStore(nil)
		d.Limiter = ratelimit.NewMemoryLimiter(s.RateLimit, nil)
		d.PreviewLimiter = ratelimit.NewMemoryLimiter(preview, nil)
		d.Fleet = ratelimit.NewMemoryFleet(s.FleetLimit)
	} else {
		callTimeout := s.FleetCallTimeout
		if callTimeout <= 0 {
			callTimeout = s.RateLimit.WithDefaults().CallTimeout
		}
		d.Idempotency = idempotency.NewRedisStore(b.Redis, b.Prefix)
		d.Limiter = ratelimit.NewRedisLimiter(b.Redis, b.Prefix, s.RateLimit, s.Log)
		d.PreviewLimiter = ratelimit.NewRedisLimiter(b.Redis, b.Prefix, preview, s.Log)
		d.Fleet = ratelimit.NewRedisFleet(b.Redis, b.Prefix, s.FleetLimit, s.FleetLease, callTimeout, s.Log)
	}
	w.Limiter, w.Fleet = d.Limiter, d.Fleet
	w.Handler = New(d)
	return w
}

// ready reports whether the database and Redis (when there is one) answer.
func ready(b Backend) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := b.DB.Ping(ctx); err != nil {
			return fmt.Errorf("database: %w", err)
		}
		if b.Redis != nil {
			if err := b.Redis.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("redis: %w", err)
			}
		}
		return nil
	}
}
