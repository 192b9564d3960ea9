package plans

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
)

// Sentinel errors of the storage edge, as the domain answers them.
var (
	// ErrNotFound: the row does not exist (or belongs to another environment).
	ErrNotFound = configdb.ErrNotFound
	// ErrUnavailable: the database cannot be reached or timed out.
	ErrUnavailable = configdb.ErrUnavailable
	// ErrCommitUnknown: the connection was lost while COMMIT was in flight,
	// so the transaction may or may not have committed.
	ErrCommitUnknown = configdb.ErrCommitUnknown
)

// Clock returns the current time; tests inject their own.
type Clock func() time.Time

// Config holds the settings of the domain service.
type Config struct {
	PlanTTL    time.Duration // validity of a plan (24h)
	ApplyLease time.Duration // lease of an applying plan (60s)
	// RevisionLimit and RevisionMaxAge bound the revisions kept per environment.
	RevisionLimit  int
	RevisionMaxAge time.Duration
	// MaxTxAttempts bounds the retries of a transaction after serialization
	// failures and deadlocks.
	MaxTxAttempts int
	// AuthCacheTTL is how long an authenticated API key is served from the
	// process without reading it again (0: every request reads it).
	AuthCacheTTL time.Duration
}

// DefaultConfig is the configuration of §11.
func DefaultConfig() Config {
	return Config{PlanTTL: 24 * time.Hour, ApplyLease: 60 * time.Second, RevisionLimit: 50,
		RevisionMaxAge: 90 * 24 * time.Hour, MaxTxAttempts: 8, AuthCacheTTL: DefaultAuthCacheTTL}
}

// Service is the configuration domain over one database (PostgreSQL, or
// the SQLite of dev mode).
type Service struct {
	db    *configdb.DB
	cfg   Config
	now   Clock
	log   *slog.Logger
	hooks Hooks
	keys  *keyCache
}

// Hooks are optional observers (metrics) and collaborators of the service.
type Hooks struct {
	// OnTxRetry is called when a transaction is retried.
	OnTxRetry func()
	// BeforeApplyWrite runs inside the apply transaction just before the
	// writes; tests use it to force failures. Nil in production.
	BeforeApplyWrite func(tx *gorm.DB) error
	// Federation writes OIDC material after an apply commits. Nil: plans that
	// need OIDC material are refused with 503.
	Federation Federation
	// Revisions is told of revision writes (metrics).
	OnRevisionsPruned func(n int)
	// OnApply is told of every apply request once it is answered (metrics).
	OnApply func(ApplyObservation)
	// OnKeyRevoked tells the other processes that the API key id was
	// revoked, so that they drop it from their authentication caches
	// (published through Redis). Nil: there are none (one process).
	OnKeyRevoked func(ctx context.Context, id string) error
	// OnPlanCreated is told of every plan creation, a restore included, by
	// its outcome: "created" or the code of the error answered (metrics).
	OnPlanCreated func(outcome string)
}

// NewService builds the domain service over an opened database.
func NewService(db *gorm.DB, cfg Config, now Clock, log *slog.Logger, hooks Hooks) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	if cfg.MaxTxAttempts <= 0 {
		cfg.MaxTxAttempts = 8
	}
	clock := func() time.Time { return now().UTC().Truncate(time.Microsecond) }
	return &Service{db: configdb.New(db, clock, configdb.Options{MaxTxAttempts: cfg.MaxTxAttempts, OnTxRetry: hooks.OnTxRetry}),
		cfg: cfg, now: clock, log: log, hooks: hooks, keys: newKeyCache(cfg.AuthCacheTTL)}
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
