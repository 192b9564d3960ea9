package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"

	confmodel "github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/metrics"
	"github.com/keenauth/configplans/migrations"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/service"
)

// devEnvironmentName names the environment dev mode creates, and finds again
// on a later start over the same data directory.
const devEnvironmentName = "dev"

// Files of dev mode's data directory.
const (
	devDatabaseFile = "keenauth.db"
	devLockFile     = "keenauthd-dev.lock"
)

// dev runs the whole product in one process on an embedded default: SQLite
// in a file of the data directory, in-process idempotency records, rate
// limits and federation service. It is single-process by design: it holds
// an exclusive lock on the data directory, and replicas need `serve` over
// PostgreSQL and Redis.
func dev(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dataDir := fs.String("data", "", "data directory (default: a new temporary directory)")
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return usageError{"dev takes only --data DIR and --listen ADDR"}
	}
	temporary := *dataDir == ""
	served := false // devServe was reached: it prints the banner, naming the directory
	if temporary {
		dir, err := os.MkdirTemp("", "keenauthd-dev-")
		if err != nil {
			return fmt.Errorf("dev: data directory: %w", err)
		}
		*dataDir = dir
		// A start that fails before the banner leaves nothing behind: the
		// directory was never shown, so nobody can start again from it. It
		// is removed after the deferred closes below (the database, the lock).
		defer func() {
			if !served {
				_ = os.RemoveAll(dir)
			}
		}()
	} else if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		return fmt.Errorf("dev: data directory: %w", err)
	}
	unlock, err := lockDataDir(filepath.Join(*dataDir, devLockFile))
	if err != nil {
		return fmt.Errorf("dev: %s is in use by another keenauthd dev (%w); stop it, or pass another --data (dev mode is one process: replicas need keenauthd serve with PostgreSQL and Redis)", *dataDir, err)
	}
	defer unlock()

	// Webhooks reach a receiver on this machine over http (§19).
	cfg.Webhooks.AllowHTTP, cfg.Webhooks.AllowPrivate = true, true
	log := newLogger(stderr, cfg.LogLevel)
	dbPath := filepath.Join(*dataDir, devDatabaseFile)
	db, err := configdb.OpenSQLite(dbPath)
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	defer closeDB(db)
	if _, err := migrations.UpSQLite(ctx, db); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	m := metrics.New()
	m.RegisterDB(sqlDB, "primary")
	secret := []byte(cfg.IdempotencySecret)
	if len(secret) == 0 {
		// The records live in this process only: any secret will do.
		secret = []byte(rand.Text())
	}
	var draining atomic.Bool
	b := service.Backend{DB: configdb.New(db, nil, m.Storage(configdb.Options{})), Federation: m.Federation(federation.NewInProcess())}
	w := service.Wire(b, settings(cfg, log, m, m.Plans(plans.Hooks{}), secret, &draining))
	svc := w.Domain
	// The in-process federation service starts empty: the material an
	// earlier start confirmed is gone with it, so the planner must plan it
	// again (a plan of the same document writes it, with its secret).
	if err := svc.Connections.ForgetConfirmedMaterial(ctx); err != nil {
		return fmt.Errorf("dev: %w", err)
	}

	// Listen before the key is made, so that a busy address costs no key.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	defer ln.Close() // the server closes it first once it serves
	env, created, err := devEnvironment(ctx, svc.Environments)
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	key, err := svc.Keys.CreateKey(ctx, env.ID, confmodel.AllPermissions())
	if err != nil {
		return fmt.Errorf("dev: create a key: %w", err)
	}
	served = true
	return devServe(ctx, cfg, ln, w, &draining, m, log, stdout, devBanner{dataDir: *dataDir, temporary: temporary,
		dbPath: dbPath, env: env, envCreated: created, key: key, addr: ln.Addr().String()})
}

// devServe serves the API on ln until ctx ends, then drains it as serve does.
func devServe(ctx context.Context, cfg config, ln net.Listener, w *service.Wired, draining *atomic.Bool, m *metrics.Metrics,
	log *slog.Logger, stdout io.Writer, banner devBanner) error {
	running := &inflight{next: w.Handler, draining: draining}
	printDevBanner(stdout, banner)
	log.Info("keenauthd dev listening", "addr", banner.addr, "data", banner.dataDir, "environment_id", banner.env.ID, "api_key_id", banner.key.ID)
	return runServer(ctx, cfg, ln, running, draining, newSweeper(w.Domain.Retention, cfg, nil, log), w.Domain.Webhooks.Dispatcher(), m.Handler(), log)
}

// devEnvironment returns the dev environment of the database, creating it
// on the first start.
func devEnvironment(ctx context.Context, envs *plans.Environments) (plans.Environment, bool, error) {
	env, err := envs.FindEnvironment(ctx, devEnvironmentName)
	if err == nil {
		return env, false, nil
	}
	if !errors.Is(err, plans.ErrNotFound) {
		return env, false, fmt.Errorf("find the %s environment: %w", devEnvironmentName, err)
	}
	env, err = envs.CreateEnvironment(ctx, devEnvironmentName)
	if err != nil {
		return env, false, fmt.Errorf("create the %s environment: %w", devEnvironmentName, err)
	}
	return env, true, nil
}

type devBanner struct {
	dataDir    string
	temporary  bool
	dbPath     string
	env        plans.Environment
	envCreated bool
	key        plans.CreatedKey
	addr       string
}

// printDevBanner tells the user what runs and how to reach it: the lines to
// paste into a shell for the keenauth CLI.
func printDevBanner(w io.Writer, b devBanner) {
	envState := "reused"
	if b.envCreated {
		envState = "created"
	}
	fmt.Fprintf(w, "keenauthd dev: one process, embedded storage, no PostgreSQL, Redis or federation service.\n")
	fmt.Fprintf(w, "  Not for production: replicas need keenauthd serve with PostgreSQL and Redis.\n")
	if b.temporary {
		fmt.Fprintf(w, "data:        %s (a new temporary directory; pass --data %s to start again from it)\n", b.dataDir, b.dataDir)
	} else {
		fmt.Fprintf(w, "data:        %s\n", b.dataDir)
	}
	fmt.Fprintf(w, "database:    %s (SQLite)\n", b.dbPath)
	fmt.Fprintf(w, "environment: %s %q (%s)\n", b.env.ID, b.env.Name, envState)
	fmt.Fprintf(w, "api key:     %s (every permission; a new key at each start: only a key's hash is kept, so an earlier key's secret cannot be shown again)\n", b.key.ID)
	fmt.Fprintf(w, "listening on %s\n", b.addr)
	fmt.Fprintf(w, "console:     http://%s/console/ (sign in with the KEENAUTH_SECRET_KEY below)\n\n", b.addr)
	fmt.Fprintf(w, "export KEENAUTH_API_URL=http://%s\n", b.addr)
	fmt.Fprintf(w, "export KEENAUTH_SECRET_KEY=%s\n\n", b.key.Secret)
}
