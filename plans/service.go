package plans

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
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
	// AuthCacheTTL is how long an authenticated API key is served from the
	// process without reading it again (0: every request reads it).
	AuthCacheTTL time.Duration
	// PlanCacheBytes is the most bytes of stored changes that the process
	// keeps of the plans it created (0: none; changesCache).
	PlanCacheBytes int64
	// Webhooks are the settings of the webhook endpoints and deliveries (§19).
	Webhooks WebhookConfig
}

// DefaultConfig is the configuration of §11.
func DefaultConfig() Config {
	return Config{PlanTTL: 24 * time.Hour, ApplyLease: 60 * time.Second, RevisionLimit: 50,
		RevisionMaxAge: 90 * 24 * time.Hour, AuthCacheTTL: DefaultAuthCacheTTL,
		PlanCacheBytes: DefaultPlanCacheBytes, Webhooks: WebhookConfig{RetrySchedule: DefaultRetrySchedule()}}
}

// core is what every part of the domain is built on: the storage, the
// federation service, the settings, the clock, the log and the observers.
// It has no methods, so embedding it gives each part its fields only.
type core struct {
	db    *configdb.DB
	fed   federation.Client
	cfg   Config
	now   Clock
	log   *slog.Logger
	hooks Hooks
}

// Service is the plan lifecycle over one database (PostgreSQL, or the
// SQLite of dev mode) and the federation service: planning, rebase,
// restore, apply, and the reads of plans and their events. The
// environment's other features are parts of their own (Domain).
type Service struct {
	core
	// changes keeps the changes of the plans this process created (nil:
	// none are kept).
	changes *changesCache
}

// Hooks are optional observers of the service (metrics, and the other
// processes' authentication caches).
type Hooks struct {
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
	// OnPlanRead is told where the changes of each plan read (a plan's
	// apply, its GET) came from: "cache" (changesCache) or "database"
	// (metrics).
	OnPlanRead func(changes string)
}

// Domain is the configuration domain over one storage, in its parts: the
// plan lifecycle (Plans) and the features beside it. New builds them over
// the same storage, settings and observers.
type Domain struct {
	Plans        *Service
	Environments *Environments
	Keys         *Keys
	Revisions    *Revisions
	Connections  *Connections
	Reads        *Reads
	Retention    *Retention
	Webhooks     *Webhooks

	// Feed reads the environment's plan events as messages (§19).
	Feed *Feed
}

// New builds the domain over its storage and the federation service, both
// required: where no federation service is configured, fed is
// federation.Unconfigured, and a plan that writes OIDC material is refused
// with 503. Its clock is the storage's.
func New(db *configdb.DB, fed federation.Client, cfg Config, log *slog.Logger, hooks Hooks) *Domain {
	if db == nil || fed == nil {
		panic("plans: New needs the storage and a federation client")
	}
	if log == nil {
		log = slog.Default()
	}
	c := core{db: db, fed: fed, cfg: cfg, now: db.Now, log: log, hooks: hooks}
	// SQLite (dev mode) reads a plan with its changes in the process:
	// there is nothing to save by keeping them.
	var changes *changesCache
	if db.ReadsPlanHeads() {
		changes = newChangesCache(cfg.PlanCacheBytes)
	}
	return &Domain{
		Plans:        &Service{core: c, changes: changes},
		Environments: &Environments{core: c},
		Keys:         &Keys{core: c, cache: newKeyCache(cfg.AuthCacheTTL)},
		Revisions:    &Revisions{core: c},
		Connections:  &Connections{core: c},
		Reads:        &Reads{core: c},
		Retention:    &Retention{core: c},
		Feed:         &Feed{core: c},
		Webhooks:     &Webhooks{core: c},
	}
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
