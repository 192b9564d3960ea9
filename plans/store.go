package plans

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// Sentinel errors of the storage edge.
var (
	// ErrNotFound: the row does not exist (or belongs to another environment).
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: the database cannot be reached or timed out.
	ErrUnavailable = errors.New("database unavailable")
	// errRetry: a serialization failure or deadlock; the transaction is run again.
	errRetry = errors.New("serialization failure")
)

// interpretError translates a driver error once, at the storage edge.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound), errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.As(err, &pe):
		switch pe.Code {
		case "22021", "22P05":
			// Text PostgreSQL cannot store (a NUL character): the service
			// refuses it when it reads a body; this is the net behind that.
			return &Error{Code: CodeMalformedRequest, Detail: "the request holds text that cannot be stored (a NUL character)"}
		case "40001", "40P01":
			return fmt.Errorf("%w: %w", errRetry, err)
		case "57P01", "57P02", "57P03", "53300", "08000", "08003", "08006", "08001", "08004":
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	if e := interpretSQLite(err); e != nil {
		return e
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &ne) || errors.As(err, &oe) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, sql.ErrConnDone) || pgconn.Timeout(err) || isConnectError(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

func isConnectError(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

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
}

// DefaultConfig is the configuration of §11.
func DefaultConfig() Config {
	return Config{PlanTTL: 24 * time.Hour, ApplyLease: 60 * time.Second, RevisionLimit: 50,
		RevisionMaxAge: 90 * 24 * time.Hour, MaxTxAttempts: 8}
}

// Service is the configuration domain over one PostgreSQL database.
type Service struct {
	db    *gorm.DB
	cfg   Config
	now   Clock
	log   *slog.Logger
	hooks Hooks
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
	// OnPlanCreated is told of every plan creation, a restore included, by
	// its outcome: "created" or the code of the error answered (metrics).
	OnPlanCreated func(outcome string)
}

// NewService builds the domain service.
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
	return &Service{db: db, cfg: cfg, now: func() time.Time { return now().UTC().Truncate(time.Microsecond) }, log: log, hooks: hooks}
}

// inTx runs fn in a transaction at the given isolation level, retrying it on
// serialization failures and deadlocks (bounded, with a short backoff).
func (s *Service) inTx(ctx context.Context, iso sql.IsolationLevel, fn func(tx *gorm.DB) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if attempt > 1 && isSQLite(tx) {
				if err := lockForRetry(tx); err != nil {
					return err
				}
			}
			return fn(tx)
		}, &sql.TxOptions{Isolation: iso})
		err = interpretErrorKeep(err)
		if !errors.Is(err, errRetry) {
			return err
		}
		if attempt >= s.cfg.MaxTxAttempts {
			// Still conflicting after every attempt: the directory is too
			// busy to answer now, and nothing was written.
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if s.hooks.OnTxRetry != nil {
			s.hooks.OnTxRetry()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
		}
	}
}

// interpretErrorKeep translates driver errors but leaves domain errors as they are.
func interpretErrorKeep(err error) error {
	var de *Error
	if err == nil || errors.As(err, &de) {
		return err
	}
	return interpretError(err)
}
