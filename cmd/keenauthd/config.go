package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/keenauth/configplans/plans"
)

// config is read from KEENAUTHD_* variables.
type config struct {
	DatabaseURL       string
	RedisURL          string
	Listen            string
	FederationURL     string
	FederationToken   string
	FederationTimeout time.Duration
	InternalToken     string
	IdempotencySecret string
	RateLimitQuota    int
	RateLimitWindow   time.Duration
	InflightLimit     int
	// The config_preview limit of plan previews (§14).
	PreviewRateLimitQuota  int
	PreviewRateLimitWindow time.Duration
	FleetApplyLimit        int
	PlanTTL                time.Duration
	ApplyLease             time.Duration
	ShutdownTimeout        time.Duration
	LogLevel               slog.Level
	DebugListen            string
	// The HTTP server's timeouts and body budget (service.HTTPLimits,
	// service.NewBodyBudget).
	ReadHeaderTimeout time.Duration
	BodyReadTimeout   time.Duration
	BodyMinRateKiB    int
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	BodyBudgetMiB     int
	BodyBudgetWait    time.Duration
	Pool              poolConfig // KEENAUTHD_DB_* (pool.go)
	PlanRetention     time.Duration
	// AuthCacheTTL bounds how long a process serves an API key from its
	// cache when the revocation published through Redis does not reach it.
	AuthCacheTTL time.Duration
	// PlanCacheMiB is how many MiB of stored changes a process keeps of
	// the plans it created, for their apply (0: none).
	PlanCacheMiB int
	// StreamHeartbeat is the interval of the live event stream's comment
	// line (§19).
	StreamHeartbeat time.Duration
	// StreamLease is how long a live stream's slot of its environment's
	// limit outlives a process that died holding it (§19).
	StreamLease time.Duration
	// Webhooks are KEENAUTHD_WEBHOOK_* (§19).
	Webhooks plans.WebhookConfig
}

func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		DatabaseURL:       or(getenv("KEENAUTHD_DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/keenauth?sslmode=disable"),
		RedisURL:          or(getenv("KEENAUTHD_REDIS_URL"), "redis://127.0.0.1:6379/0"),
		Listen:            or(getenv("KEENAUTHD_LISTEN"), "127.0.0.1:8080"),
		FederationURL:     getenv("KEENAUTHD_FEDERATION_URL"),
		FederationToken:   getenv("KEENAUTHD_FEDERATION_TOKEN"),
		InternalToken:     getenv("KEENAUTHD_INTERNAL_TOKEN"),
		IdempotencySecret: getenv("KEENAUTHD_IDEMPOTENCY_SECRET"),
		DebugListen:       getenv("KEENAUTHD_DEBUG_LISTEN"),
	}
	var errs []string
	dur := func(name string, def time.Duration) time.Duration {
		v := getenv(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("%s=%q is not a positive Go duration (e.g. 60s)", name, v))
			return def
		}
		return d
	}
	num := func(name string, def int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Sprintf("%s=%q is not a positive whole number", name, v))
			return def
		}
		return n
	}
	c.FederationTimeout = dur("KEENAUTHD_FEDERATION_TIMEOUT", 5*time.Second)
	c.RateLimitQuota = num("KEENAUTHD_RATE_LIMIT_QUOTA", 30)
	c.RateLimitWindow = dur("KEENAUTHD_RATE_LIMIT_WINDOW", 60*time.Second)
	c.InflightLimit = num("KEENAUTHD_INFLIGHT_LIMIT", 2)
	c.PreviewRateLimitQuota = num("KEENAUTHD_PREVIEW_RATE_LIMIT_QUOTA", 120)
	c.PreviewRateLimitWindow = dur("KEENAUTHD_PREVIEW_RATE_LIMIT_WINDOW", 60*time.Second)
	c.FleetApplyLimit = num("KEENAUTHD_FLEET_APPLY_LIMIT", 64)
	c.PlanTTL = dur("KEENAUTHD_PLAN_TTL", 24*time.Hour)
	c.ApplyLease = dur("KEENAUTHD_APPLY_LEASE", 60*time.Second)
	c.ShutdownTimeout = dur("KEENAUTHD_SHUTDOWN_TIMEOUT", 30*time.Second)
	c.ReadHeaderTimeout = dur("KEENAUTHD_READ_HEADER_TIMEOUT", 10*time.Second)
	c.BodyReadTimeout = dur("KEENAUTHD_BODY_READ_TIMEOUT", 10*time.Second)
	c.BodyMinRateKiB = num("KEENAUTHD_BODY_MIN_RATE_KIB", 128)
	c.WriteTimeout = dur("KEENAUTHD_WRITE_TIMEOUT", 5*time.Minute)
	c.IdleTimeout = dur("KEENAUTHD_IDLE_TIMEOUT", 120*time.Second)
	c.BodyBudgetMiB = num("KEENAUTHD_BODY_BUDGET_MIB", 64)
	c.BodyBudgetWait = dur("KEENAUTHD_BODY_BUDGET_WAIT", time.Second)
	c.PlanRetention = dur("KEENAUTHD_PLAN_RETENTION", 90*24*time.Hour)
	c.AuthCacheTTL = dur("KEENAUTHD_AUTH_CACHE_TTL", 5*time.Second)
	c.PlanCacheMiB = plans.DefaultPlanCacheBytes >> 20
	if v := getenv("KEENAUTHD_PLAN_CACHE_MIB"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			errs = append(errs, fmt.Sprintf("KEENAUTHD_PLAN_CACHE_MIB=%q is not a whole number of MiB (0 keeps none)", v))
		} else {
			c.PlanCacheMiB = n
		}
	}
	c.StreamHeartbeat = dur("KEENAUTHD_STREAM_HEARTBEAT", 15*time.Second)
	c.StreamLease = dur("KEENAUTHD_STREAM_LEASE", 30*time.Second)
	errs = append(errs, loadWebhooks(getenv, &c.Webhooks)...)
	var poolErrs []string
	c.Pool, poolErrs = loadPool(getenv)
	errs = append(errs, poolErrs...)
	if v := getenv("KEENAUTHD_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Sprintf("KEENAUTHD_LOG_LEVEL=%q is not debug, info, warn or error", v))
		}
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// loadWebhooks reads KEENAUTHD_WEBHOOK_ALLOW_HTTP and _ALLOW_PRIVATE (true
// or false, default false) and _RETRY_SCHEDULE (comma-separated Go
// durations, default §19's) into w, and returns the problems.
func loadWebhooks(getenv func(string) string, w *plans.WebhookConfig) []string {
	var errs []string
	for _, v := range []struct {
		name string
		dst  *bool
	}{{"KEENAUTHD_WEBHOOK_ALLOW_HTTP", &w.AllowHTTP}, {"KEENAUTHD_WEBHOOK_ALLOW_PRIVATE", &w.AllowPrivate}} {
		switch getenv(v.name) {
		case "", "false":
		case "true":
			*v.dst = true
		default:
			errs = append(errs, fmt.Sprintf("%s=%q is not true or false", v.name, getenv(v.name)))
		}
	}
	w.RetrySchedule = plans.DefaultRetrySchedule()
	if v := getenv("KEENAUTHD_WEBHOOK_RETRY_SCHEDULE"); v != "" {
		schedule, err := plans.ParseRetrySchedule(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("KEENAUTHD_WEBHOOK_RETRY_SCHEDULE=%q: %v", v, err))
		} else {
			w.RetrySchedule = schedule
		}
	}
	return errs
}
