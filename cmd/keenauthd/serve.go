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
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/idempotency"
	"github.com/keenauth/configplans/migrations"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/ratelimit"
	"github.com/keenauth/configplans/service"
)

// openDB connects to PostgreSQL, creating the database when it does not
// exist yet (so that a fresh machine needs no manual step).
func openDB(ctx context.Context, dsn string) (*gorm.DB, error) {
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err == nil {
		sqlDB, _ := db.DB()
		if err = sqlDB.PingContext(ctx); err == nil {
			sqlDB.SetMaxOpenConns(32)
			sqlDB.SetMaxIdleConns(32)
			sqlDB.SetConnMaxIdleTime(5 * time.Minute)
			return db, nil
		}
		_ = sqlDB.Close()
	}
	if !strings.Contains(err.Error(), "does not exist") {
		return nil, fmt.Errorf("database: %w", err)
	}
	if cerr := createDatabase(ctx, dsn); cerr != nil {
		return nil, fmt.Errorf("database: %w (and creating it failed: %v)", err, cerr)
	}
	return openDB(ctx, dsn)
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
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// newRedis builds a client that fails fast when Redis is down: one dial
// attempt with short timeouts, so a claim answers 503 promptly.
func newRedis(rawURL string) (*redis.Client, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("KEENAUTHD_REDIS_URL: %w", err)
	}
	opt.DialTimeout = 500 * time.Millisecond
	opt.ReadTimeout = time.Second
	opt.WriteTimeout = time.Second
	opt.MaxRetries = 1
	opt.DialerRetries = 1
	opt.ContextTimeoutEnabled = true
	return redis.NewClient(opt), nil
}

func migrate(ctx context.Context, cfg config, stdout io.Writer) error {
	db, err := openDB(ctx, cfg.DatabaseURL)
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

func domain(ctx context.Context, cfg config, log *slog.Logger, hooks plans.Hooks) (*plans.Service, *gorm.DB, error) {
	db, err := openDB(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	pc := plans.DefaultConfig()
	pc.PlanTTL, pc.ApplyLease = cfg.PlanTTL, cfg.ApplyLease
	return plans.NewService(db, pc, nil, log, hooks), db, nil
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
	env, err := svc.CreateEnvironment(ctx, *name)
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
	if err := fs.Parse(args); err != nil || *env == "" || *perms == "" {
		return usageError{"key create needs --env ENV_ID --permissions PERM[,PERM…]"}
	}
	var list []string
	if *perms == "all" {
		list = plans.AllPermissions()
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
	k, err := svc.CreateKey(ctx, *env, list)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(k)
}

func keyRevoke(ctx context.Context, cfg config, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return usageError{"key revoke needs KEY_ID"}
	}
	svc, db, err := domain(ctx, cfg, newLogger(io.Discard, 0), plans.Hooks{})
	if err != nil {
		return err
	}
	defer closeDB(db)
	if err := svc.RevokeKey(ctx, args[0]); err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"id": args[0], "revoked": true})
}

func serve(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) error {
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
	hooks := plans.Hooks{}
	if cfg.FederationURL != "" {
		hooks.Federation = federation.NewHTTPClient(federation.HTTPConfig{BaseURL: cfg.FederationURL, Token: cfg.FederationToken, Timeout: cfg.FederationTimeout})
	} else {
		log.Warn("KEENAUTHD_FEDERATION_URL is not set: plans that write OIDC material will be answered 503")
	}
	svc, db, err := domain(ctx, cfg, log, hooks)
	if err != nil {
		return err
	}
	defer closeDB(db)
	if !*noMigrate {
		if _, err := migrations.Up(ctx, db); err != nil {
			return err
		}
	}
	rdb, err := newRedis(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if policy, evicting, err := idempotency.CheckEvictionPolicy(ctx, rdb); err != nil {
		log.Warn("could not read Redis maxmemory-policy", "error", err)
	} else if evicting {
		log.Warn("Redis maxmemory-policy can evict idempotency records; PostgreSQL still answers replays of applied plans, but set noeviction", "policy", policy)
	}
	rl := ratelimit.Config{Quota: cfg.RateLimitQuota, Window: cfg.RateLimitWindow, Inflight: cfg.InflightLimit, Lease: 2 * cfg.ApplyLease}
	var draining atomic.Bool
	handler := service.New(service.Deps{
		Plans:             svc,
		Idempotency:       idempotency.NewRedisStore(rdb, "keenauthd:"),
		IdempotencySecret: []byte(cfg.IdempotencySecret),
		IdempotencyLease:  2 * cfg.ApplyLease,
		Limiter:           ratelimit.NewRedisLimiter(rdb, "keenauthd:", rl, log),
		Fleet:             ratelimit.NewRedisFleet(rdb, "keenauthd:", cfg.FleetApplyLimit, 2*cfg.ApplyLease, rl.WithDefaults().CallTimeout, log),
		RateLimit:         rl,
		InternalToken:     cfg.InternalToken,
		Log:               log,
		Ready: func(ctx context.Context) error {
			sqlDB, _ := db.DB()
			if err := sqlDB.PingContext(ctx); err != nil {
				return fmt.Errorf("database: %w", err)
			}
			if err := rdb.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("redis: %w", err)
			}
			return nil
		},
		Draining: draining.Load,
	})
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go sweepRevisions(ctx, svc, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("keenauthd listening", "addr", ln.Addr().String())
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	draining.Store(true)
	log.Info("shutting down: draining requests", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// sweepRevisions prunes old revisions of every environment periodically, so
// that environments without applies also lose theirs after 90 days.
func sweepRevisions(ctx context.Context, svc *plans.Service, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := svc.PruneRevisions(ctx); err != nil && ctx.Err() == nil {
			log.Warn("revision sweep failed", "error", err)
		} else if n > 0 {
			log.Info("revision sweep", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
