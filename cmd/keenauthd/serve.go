package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	confmodel "github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/idempotency"
	"github.com/keenauth/configplans/metrics"
	"github.com/keenauth/configplans/migrations"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/ratelimit"
	"github.com/keenauth/configplans/service"
)

// openDB connects to PostgreSQL, creating the database when it does not
// exist yet (so that a fresh machine needs no manual step).
func openDB(ctx context.Context, dsn string, pool poolConfig) (*gorm.DB, error) {
	withPlans, err := configdb.GenericPlans(dsn)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	db, err := gorm.Open(postgres.Open(withPlans), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err == nil {
		sqlDB, _ := db.DB()
		if err = sqlDB.PingContext(ctx); err == nil {
			if err = pool.apply(ctx, sqlDB); err == nil {
				return db, nil
			}
		}
		_ = sqlDB.Close()
	}
	if !strings.Contains(err.Error(), "does not exist") {
		return nil, fmt.Errorf("database: %w", err)
	}
	if cerr := createDatabase(ctx, dsn); cerr != nil {
		return nil, fmt.Errorf("database: %w (and creating it failed: %v)", err, cerr)
	}
	return openDB(ctx, dsn, pool)
}

func createDatabase(ctx context.Context, dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return errors.New("the database URL names no database")
	}
	u.Path = "/postgres"
	admin, err := gorm.Open(postgres.Open(u.String()), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return err
	}
	sqlDB, _ := admin.DB()
	defer sqlDB.Close()
	err = admin.WithContext(ctx).Exec(`CREATE DATABASE "` + strings.ReplaceAll(name, `"`, `""`) + `"`).Error
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return service.NewLogger(w, level)
}

func migrate(ctx context.Context, cfg config, stdout io.Writer) error {
	db, err := openDB(ctx, cfg.DatabaseURL, cfg.Pool)
	if err != nil {
		return err
	}
	defer closeDB(db)
	applied, err := migrations.Up(ctx, db)
	if err != nil {
		return err
	}
	if applied == nil {
		applied = []string{}
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"applied": applied})
}

func closeDB(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}

func domain(ctx context.Context, cfg config, log *slog.Logger, hooks plans.Hooks) (*plans.Domain, *gorm.DB, error) {
	db, err := openDB(ctx, cfg.DatabaseURL, cfg.Pool)
	if err != nil {
		return nil, nil, err
	}
	// The admin commands call no federation service.
	return plans.New(configdb.New(db, nil, configdb.Options{}), federation.Unconfigured{}, planConfig(cfg), log, hooks), db, nil
}

// planConfig is the domain's configuration of cfg.
func planConfig(cfg config) plans.Config {
	pc := plans.DefaultConfig()
	pc.PlanTTL, pc.ApplyLease, pc.AuthCacheTTL = cfg.PlanTTL, cfg.ApplyLease, cfg.AuthCacheTTL
	pc.PlanCacheBytes = int64(cfg.PlanCacheMiB) << 20
	return pc
}

func envCreate(ctx context.Context, cfg config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("env create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", "", "environment name")
	if err := fs.Parse(args); err != nil || *name == "" {
		return usageError{"env create needs --name NAME"}
	}
	svc, db, err := domain(ctx, cfg, newLogger(io.Discard, 0), plans.Hooks{})
	if err != nil {
		return err
	}
	defer closeDB(db)
	env, err := svc.Environments.CreateEnvironment(ctx, *name)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]string{"id": env.ID})
}

func keyCreate(ctx context.Context, cfg config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("key create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	env := fs.String("env", "", "environment id")
	perms := fs.String("permissions", "", "comma-separated permissions, or all")
	var owner *string
	fs.Func("owner", "who the key is for, e.g. an e-mail address (1–200 printable characters)", func(v string) error {
		owner = &v
		return nil
	})
	if err := fs.Parse(args); err != nil || *env == "" || *perms == "" {
		return usageError{"key create needs --env ENV_ID --permissions PERM[,PERM…]"}
	}
	var list []string
	if *perms == "all" {
		list = confmodel.AllPermissions()
	} else {
		for _, p := range strings.Split(*perms, ",") {
			if p = strings.TrimSpace(p); p != "" {
				list = append(list, p)
			}
		}
	}
	svc, db, err := domain(ctx, cfg, newLogger(io.Discard, 0), plans.Hooks{})
	if err != nil {
		return err
	}
	defer closeDB(db)
	if owner != nil {
		// Refused before anything is opened or created.
		if err := plans.CheckOwner(*owner); err != nil {
			return usageError{"key create --owner: " + err.Error()}
		}
	}
	k, err := createKey(ctx, svc.Keys, *env, list, owner)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(k)
}

func createKey(ctx context.Context, svc *plans.Keys, env string, perms []string, owner *string) (plans.CreatedKey, error) {
	if owner == nil {
		return svc.CreateKey(ctx, env, perms)
	}
	return svc.CreateOwnedKey(ctx, env, *owner, perms)
}

func keyRevoke(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("key revoke", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	env := fs.String("env", "", "environment id (the key's; without it the key is looked up by id)")
	var ids []string
	for len(args) > 0 { // flags before or after KEY_ID
		if err := fs.Parse(args); err != nil {
			return usageError{"key revoke needs KEY_ID [--env ENV_ID]"}
		}
		if args = fs.Args(); len(args) > 0 {
			ids, args = append(ids, args[0]), args[1:]
		}
	}
	if len(ids) != 1 {
		return usageError{"key revoke needs KEY_ID [--env ENV_ID]"}
	}
	rdb, err := newRedis(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	svc, db, err := domain(ctx, cfg, newLogger(io.Discard, 0), plans.Hooks{OnKeyRevoked: service.PublishRevocations(rdb, "keenauthd:")})
	if err != nil {
		return err
	}
	defer closeDB(db)
	if *env != "" {
		err = svc.Keys.RevokeEnvironmentKey(ctx, *env, ids[0])
	} else {
		err = svc.Keys.RevokeKey(ctx, ids[0])
	}
	var unpublished *plans.RevocationNotPublished
	if errors.As(err, &unpublished) {
		// Revoked: the replicas that could not be told stop accepting the
		// key once their cached copy is KEENAUTHD_AUTH_CACHE_TTL old.
		fmt.Fprintf(stderr, "keenauthd: warning: %v; every replica stops accepting it within KEENAUTHD_AUTH_CACHE_TTL (%s)\n", err, cfg.AuthCacheTTL)
		err = nil
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"id": ids[0], "revoked": true})
}

func serve(ctx context.Context, cfg config, getenv func(string) string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	noMigrate := fs.Bool("no-migrate", false, "do not run migrations on start")
	if err := fs.Parse(args); err != nil {
		return usageError{"serve takes only --no-migrate"}
	}
	if cfg.IdempotencySecret == "" {
		return errors.New("KEENAUTHD_IDEMPOTENCY_SECRET is required: every replica must share it so that a retry matches on any of them")
	}
	log := newLogger(stderr, cfg.LogLevel)
	redisLog.Store(log)
	defer redisLog.CompareAndSwap(log, nil)
	m := metrics.New()
	tr, err := newTracing(ctx, getenv, log)
	if err != nil {
		return err
	}
	// The spans still buffered are exported once the requests have
	// drained and the pools closed (deferred first, so run last).
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
		defer cancel()
		if err := tr.shutdown(sctx); err != nil {
			log.Warn("tracing: the last spans could not be exported", "error", err)
		}
	}()
	var fed federation.Client = federation.Unconfigured{}
	if cfg.FederationURL != "" {
		fed = federation.NewHTTPClient(federation.HTTPConfig{BaseURL: cfg.FederationURL, Token: cfg.FederationToken,
			Timeout: cfg.FederationTimeout, HTTPClient: tr.httpClient()})
	} else {
		log.Warn("KEENAUTHD_FEDERATION_URL is not set: plans that write OIDC material will be answered 503")
	}
	db, err := openDB(ctx, cfg.DatabaseURL, cfg.Pool)
	if err != nil {
		return err
	}
	defer closeDB(db)
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	m.RegisterDB(sqlDB, "primary")
	if !*noMigrate {
		if _, err := migrations.Up(ctx, db); err != nil {
			return err
		}
	}
	// The migrations are not traced: a trace is a request's.
	if err := tr.instrumentDB(db); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	rdb, err := newRedis(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := tr.instrumentRedis(rdb); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	if reachable, err := checkRedisMode(ctx, rdb); err != nil {
		return err
	} else if !reachable {
		log.Warn("Redis is not reachable at start: idempotent requests answer 503 and rate limits fail open until it is")
	}
	m.RegisterRedis(rdb)
	if policy, evicting, err := idempotency.CheckEvictionPolicy(ctx, rdb); err != nil {
		log.Warn("could not read Redis maxmemory-policy", "error", err)
	} else if evicting {
		log.Warn("Redis maxmemory-policy can evict idempotency records; PostgreSQL still answers replays of applied plans, but set noeviction", "policy", policy)
	}
	var draining atomic.Bool
	b := service.Backend{DB: configdb.New(db, nil, m.Storage(configdb.Options{})), Federation: m.Federation(fed), Redis: rdb, Prefix: "keenauthd:"}
	w := service.Wire(b, settings(cfg, log, m, m.Plans(plans.Hooks{}), []byte(cfg.IdempotencySecret), &draining))
	followCtx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	go service.FollowRevocations(followCtx, rdb, "keenauthd:", w.Domain.Keys, log)
	go w.Events.Follow(followCtx)
	for name, f := range map[string]any{"limiter": w.Limiter, "fleet": w.Fleet} {
		if f, ok := f.(metrics.Failures); ok {
			m.RegisterFailOpens(name, f)
		}
	}
	running := &inflight{next: tr.handler(w.Handler), draining: &draining}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	if tr != nil {
		log.Info("tracing: exporting spans over OTLP/HTTP")
	}
	log.Info("keenauthd listening", "addr", ln.Addr().String())
	// The address, for the scripts and tests that start serve on port 0,
	// as a JSON line too: every line keenauthd writes is one (§23).
	_ = json.NewEncoder(stdout).Encode(map[string]string{"msg": "listening on", "addr": ln.Addr().String()})
	return runServer(ctx, cfg, ln, running, &draining, newSweeper(w.Domain.Retention, cfg, newSweepLock(rdb, "keenauthd:"), log),
		w.Domain.Webhooks.Dispatcher(), m.Handler(), log)
}

// settings are the choices of serve and dev for one keenauthd: the
// configuration of cfg, the metrics m and the domain's hooks.
func settings(cfg config, log *slog.Logger, m *metrics.Metrics, hooks plans.Hooks, secret []byte, draining *atomic.Bool) service.Settings {
	pc := planConfig(cfg)
	pc.Webhooks = cfg.Webhooks
	return service.Settings{
		Plans:             pc,
		PlanHooks:         hooks,
		RateLimit:         ratelimit.Config{Quota: cfg.RateLimitQuota, Window: cfg.RateLimitWindow, Inflight: cfg.InflightLimit, Lease: 2 * cfg.ApplyLease},
		PreviewRateLimit:  ratelimit.Config{Quota: cfg.PreviewRateLimitQuota, Window: cfg.PreviewRateLimitWindow, Lease: 2 * cfg.ApplyLease},
		FleetLimit:        cfg.FleetApplyLimit,
		FleetLease:        2 * cfg.ApplyLease,
		IdempotencySecret: secret,
		IdempotencyLease:  2 * cfg.ApplyLease,
		InternalToken:     cfg.InternalToken,
		Log:               log,
		Draining:          draining.Load,
		Metrics:           m.Handler(),
		Hooks:             m.Service(),
		HTTP:              httpLimits(cfg),
		Bodies:            bodyBudget(cfg),
		Streams:           service.StreamSettings{Heartbeat: cfg.StreamHeartbeat, Lease: cfg.StreamLease},
	}
}

// runServer serves on ln until ctx ends, with the retention sweep and the
// debug endpoints beside it, then drains: the part serve and dev share.
func runServer(ctx context.Context, cfg config, ln net.Listener, running *inflight, draining *atomic.Bool, sweep *sweeper,
	dispatch *plans.Dispatcher, metrics http.Handler, log *slog.Logger) error {
	// net/http's own reports (an accept failing for want of file
	// descriptors, a handler's misuse) are lines of the JSON log too.
	srv := &http.Server{Handler: running, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	httpLimits(cfg).Configure(srv)

	// Background work stops, and is waited for, before the pools close.
	bgCtx, stopBackground := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() {
		stopBackground()
		bg.Wait()
	}()
	bg.Go(func() { sweep.run(bgCtx) })
	// Every replica dispatches the webhook deliveries (§19).
	bg.Go(func() { dispatch.Run(bgCtx) })
	if cfg.DebugListen != "" {
		dbg, err := debugServer(bgCtx, cfg.DebugListen, metrics, log, &bg)
		if err != nil {
			_ = ln.Close()
			return err
		}
		log.Info("keenauthd debug endpoints (pprof, metrics) listening", "addr", dbg)
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(service.EdgeListener(ln)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return drain(ctx, srv, running, draining, cfg.ShutdownTimeout, log)
}

// httpLimits are the HTTP server's timeouts of cfg: runServer configures
// the server with them, and the handler (service.Deps.HTTP) bounds the
// bodies it reads with the same.
func httpLimits(cfg config) service.HTTPLimits {
	return service.HTTPLimits{ReadHeaderTimeout: cfg.ReadHeaderTimeout, BodyReadTimeout: cfg.BodyReadTimeout,
		BodyMinRate: int64(cfg.BodyMinRateKiB) << 10, WriteTimeout: cfg.WriteTimeout, IdleTimeout: cfg.IdleTimeout}
}

// bodyBudget is the budget of large request bodies of cfg.
func bodyBudget(cfg config) *service.BodyBudget {
	return service.NewBodyBudget(int64(cfg.BodyBudgetMiB)<<20, cfg.BodyBudgetWait)
}

// tracingFlushTimeout bounds the export of the last spans at shutdown.
const tracingFlushTimeout = 5 * time.Second

// cutOffGrace is how long the requests cut off by a shutdown timeout have to
// release what they hold (an apply returns its plan to planned) before the
// pools close; a release is bounded by 5 s.
const cutOffGrace = 10 * time.Second

// drain shuts the server down gracefully: /readyz answers 503 at once, new
// requests are refused with 503 while the running ones (applies among them)
// finish, then the listener closes. All of it within timeout; past it the
// remaining connections are closed and drain fails.
func drain(ctx context.Context, srv *http.Server, running *inflight, draining *atomic.Bool, timeout time.Duration, log *slog.Logger) error {
	draining.Store(true)
	srv.SetKeepAlivesEnabled(false)
	log.Info("shutting down: draining requests", "running", running.count(), "timeout", timeout.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	err := running.wait(sctx)
	if err == nil {
		err = srv.Shutdown(sctx)
	}
	if err != nil {
		log.Error("shutdown: cutting off the requests still running", "running", running.count(), "timeout", timeout.String())
		_ = srv.Close()
		gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), cutOffGrace)
		defer gcancel()
		if running.wait(gctx) != nil {
			log.Error("shutdown: cut-off requests did not end; their leases will free what they hold", "running", running.count())
		}
		return fmt.Errorf("shutdown: requests still running after %s: %w", timeout, err)
	}
	log.Info("keenauthd stopped")
	return nil
}

// inflight counts the requests being served, so that a drain can wait for
// them. The operator's endpoints are not counted, nor the requests that
// arrive once the drain started (the router refuses them).
type inflight struct {
	next     http.Handler
	draining *atomic.Bool
	n        atomic.Int64
}

func (f *inflight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !operatorPath(r.URL.Path) {
		f.n.Add(1)
		if f.draining.Load() {
			f.n.Add(-1)
		} else {
			defer f.n.Add(-1)
		}
	}
	f.next.ServeHTTP(w, r)
}

func (f *inflight) count() int64 { return f.n.Load() }

// wait returns when no counted request runs, or with ctx's error.
func (f *inflight) wait(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for f.n.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func operatorPath(p string) bool { return p == "/healthz" || p == "/readyz" || p == "/metrics" }

// debugServer serves pprof and the metrics on addr (KEENAUTHD_DEBUG_LISTEN)
// until ctx ends. It is off unless configured: profiles show the program's
// internals and must stay on a private address.
func debugServer(ctx context.Context, addr string, metrics http.Handler, log *slog.Logger, bg *sync.WaitGroup) (string, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/metrics", metrics)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("KEENAUTHD_DEBUG_LISTEN: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	bg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("debug server stopped", "error", err)
		}
	})
	bg.Go(func() {
		<-ctx.Done()
		_ = srv.Close()
	})
	return ln.Addr().String(), nil
}
