// Package configdb is the storage of the configuration domain: the GORM
// models of its tables, the PostgreSQL and SQLite dialects, the loaders and
// every write. Writes happen in a unit of work, a *Tx, that only InTx opens:
// it carries the clock reading of the transaction and its dialect, and it
// is retried on serialization failures and deadlocks. Driver errors are
// translated once, here (ErrNotFound, ErrUnavailable, ErrUnstorableText).
//
// The plan's life is a set of named transitions (ClaimPlan, RenewLease,
// RecordApply, FinishPlan, ReleasePlan, MarkConflicted, MarkExpired,
// RecordEvent): no SQL about plans is written anywhere else. It is the one
// owner of every table, config_revisions included (the revisions package
// keeps a revision's types and encoding).
//
// A comment's "§N" is a section, and "row N" a row of the apply's error table
// (§6), of the contract as docs/contract.md states it.
package configdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// Options are the retry policy of transactions, their observer, and the
// seam that tests write through.
type Options struct {
	// MaxTxAttempts bounds the runs of a transaction after serialization
	// failures and deadlocks (8 when zero).
	MaxTxAttempts int
	// OnTxRetry is called when a transaction is run again.
	OnTxRetry func()
	// BeforeApplyWrite is a test option: it runs inside an apply's
	// transaction just before its writes (WriteResources,
	// RecordApplyOutcome), so that a test can force a failure there. Nil in
	// production.
	BeforeApplyWrite func(tx *gorm.DB) error
}

// DB is the configuration database. Its reads run on the pool; its writes
// run in a *Tx.
type DB struct {
	Reader
	now  func() time.Time
	opts Options
	// eventsCommitted is OnEventsCommitted's follower.
	eventsCommitted func(envIDs []string)
}

// New wraps an opened database (PostgreSQL or SQLite); now is the clock
// every transaction reads once (nil: the real time), read in UTC and to the
// microsecond, as the database stores it.
func New(g *gorm.DB, now func() time.Time, opts Options) *DB {
	if opts.MaxTxAttempts <= 0 {
		opts.MaxTxAttempts = 8
	}
	if now == nil {
		now = time.Now
	}
	clock := func() time.Time { return now().UTC().Truncate(time.Microsecond) }
	return &DB{Reader: Reader{g: g, sqlite: isSQLite(g)}, now: clock, opts: opts}
}

// MaxTxAttempts is the bound on the runs of one transaction.
func (d *DB) MaxTxAttempts() int { return d.opts.MaxTxAttempts }

// Ping reports whether the database answers.
func (d *DB) Ping(ctx context.Context) error {
	sqlDB, err := d.g.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Tx is one transaction: every write of the domain goes through one.
type Tx struct {
	Reader
	// Now is the time of the transaction: every row it writes carries it.
	Now time.Time
	// seam is Options.BeforeApplyWrite.
	seam func(*gorm.DB) error
	// announced are the environments whose plan events it writes.
	announced []string
}

// beforeApplyWrite runs the test seam, when there is one, before an
// apply's writes.
func (tx *Tx) beforeApplyWrite() error {
	if tx.seam == nil {
		return nil
	}
	return tx.seam(tx.g)
}

// Reader holds the loaders, on the pool (DB.Reader) or in a transaction
// (Tx.Reader), so that a loader serves both.
type Reader struct {
	g      *gorm.DB
	sqlite bool
}

func (r Reader) q(ctx context.Context) *gorm.DB { return r.g.WithContext(ctx) }

// RowLocks reports whether the database locks rows (PostgreSQL). SQLite,
// in the process, has one writer at a time instead, and no row locks.
func (r Reader) RowLocks() bool { return !r.sqlite }

// InTx runs fn in a transaction at the given isolation level, retrying it
// (bounded, with a short backoff) on serialization failures and deadlocks,
// and on a lost connection before COMMIT was sent: nothing was committed,
// and the next attempt takes a fresh connection. A connection lost while
// COMMIT was in flight is not retried: the transaction may have committed,
// and the error is ErrCommitUnknown (and ErrUnavailable) for the caller to
// resolve. It is the only way a transaction is opened.
//
// After an attempt lost its connection, a plan found locked (ErrPlanBusy)
// is retried as a conflict is: the lock is most likely that attempt's own,
// held by a backend that has not yet seen its connection go (it reads the
// end of it, rolls back and lets go in a moment, longer on a busy
// machine). Still locked after every attempt, the answer is ErrUnavailable.
func (d *DB) InTx(ctx context.Context, iso sql.IsolationLevel, fn func(tx *Tx) error) error {
	var err error
	lost := false // an attempt lost its connection
	for attempt := 1; ; attempt++ {
		committing := false
		var tx *Tx
		err = d.g.WithContext(ctx).Transaction(func(g *gorm.DB) error {
			tx = &Tx{Reader: Reader{g: g, sqlite: d.sqlite}, Now: d.now(), seam: d.opts.BeforeApplyWrite}
			if attempt > 1 && d.sqlite {
				if err := lockForRetry(g); err != nil {
					return err
				}
			}
			if err := fn(tx); err != nil {
				return err
			}
			committing = true
			return nil
		}, &sql.TxOptions{Isolation: iso})
		// pgx may call a COMMIT that it wrote "safe to retry" when the
		// connection breaks before its answer: only a read can tell.
		if err != nil && committing && connectionLost(err) {
			return fmt.Errorf("%w: %w: %w", ErrCommitUnknown, ErrUnavailable, err)
		}
		if err == nil {
			d.committed(tx)
		}
		err = interpretErrorKeep(err)
		if lost && errors.Is(err, ErrPlanBusy) {
			// Not ErrPlanBusy any more: still locked after every attempt,
			// the apply answers 503, not 409 "being applied".
			err = fmt.Errorf("%w: after a lost connection: %v", errRetry, err)
		}
		lost = lost || errors.Is(err, ErrUnavailable)
		if retry, err := d.again(ctx, attempt, err); !retry {
			return err
		}
	}
}

// InTxV is InTx for a unit of work that answers a value: the value of its
// last run, with InTx's error.
func InTxV[T any](ctx context.Context, d *DB, iso sql.IsolationLevel, fn func(tx *Tx) (T, error)) (T, error) {
	var out T
	err := d.InTx(ctx, iso, func(tx *Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

// again decides, after the attempt-th run of a unit of work failed with
// err (nil: it succeeded), whether to run it again, after a short backoff:
// on serialization failures and deadlocks, and on a lost connection that
// did not leave the outcome unknown. When not, it returns the error to
// answer.
func (d *DB) again(ctx context.Context, attempt int, err error) (bool, error) {
	err = interpretErrorKeep(err)
	lost := errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrCommitUnknown) && ctx.Err() == nil
	if !errors.Is(err, errRetry) && !lost {
		return false, err
	}
	if attempt >= d.opts.MaxTxAttempts {
		// Still conflicting after every attempt: the directory is too
		// busy to answer now, and nothing was written.
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if d.opts.OnTxRetry != nil {
		d.opts.OnTxRetry()
	}
	select {
	case <-ctx.Done():
		return false, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
	case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
	}
	return true, nil
}

// InStatement runs fn, a write that is one statement on PostgreSQL, on
// its own, without BEGIN and COMMIT: the statement is atomic by itself
// (data-modifying CTEs, such as a transition of a plan with its event),
// and the transaction's two round trips are saved. On SQLite fn may run
// several statements, and runs in a transaction (InTx). It is retried as
// InTx is. A connection lost once the statement may have reached the
// server leaves its outcome unknown, as a COMMIT in flight does: the
// error is then ErrCommitUnknown (and ErrUnavailable), for the caller to
// resolve. So is a context that ends while the statement runs.
func (d *DB) InStatement(ctx context.Context, fn func(tx *Tx) error) error {
	if d.sqlite {
		return d.InTx(ctx, sql.LevelDefault, fn)
	}
	for attempt := 1; ; attempt++ {
		tx := &Tx{Reader: Reader{g: d.g}, Now: d.now(), seam: d.opts.BeforeApplyWrite}
		err := fn(tx)
		if outcomeUnknown(ctx, err) {
			return fmt.Errorf("%w: %w: %w", ErrCommitUnknown, ErrUnavailable, err)
		}
		if err == nil {
			d.committed(tx)
		}
		if retry, err := d.again(ctx, attempt, err); !retry {
			return err
		}
	}
}

// outcomeUnknown reports whether a statement run on its own that failed
// with err may nevertheless have committed: its connection was lost, or
// its context ended, after it may have reached the server. pgx marks what
// it failed to send at all as safe to retry; a connection that could not
// be opened sent nothing; and an answer of the server (an error it
// returned, a statement it cancelled) says the statement did not commit.
func outcomeUnknown(ctx context.Context, err error) bool {
	if err == nil || pgconn.SafeToRetry(err) || isConnectError(err) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return lostSQLState(pe.Code) && pe.Code != "57014" && pe.Code != "53300"
	}
	return connectionLost(err) || ctx.Err() != nil
}

// InStatementDetached is InStatement for the writes that must happen even
// when the request's context is gone, as InTxDetached.
func (d *DB) InStatementDetached(ctx context.Context, fn func(tx *Tx) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), detachedTimeout)
	defer cancel()
	return d.InStatement(ctx, fn)
}

// detachedTimeout bounds a transaction that outlives its request.
const detachedTimeout = 5 * time.Second

// InTxDetached is InTx for the writes that must happen even when the
// request's context is gone (a release, a recorded rejection, the end of
// an apply whose records are committed): it runs, and rolls back, without
// the request's cancellation, within detachedTimeout.
func (d *DB) InTxDetached(ctx context.Context, fn func(tx *Tx) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), detachedTimeout)
	defer cancel()
	return d.InTx(ctx, sql.LevelDefault, fn)
}

// Write runs one write in its own transaction (READ COMMITTED): the
// statements that need no other read, such as an upsert.
func (d *DB) Write(ctx context.Context, fn func(tx *Tx) error) error {
	return d.InTx(ctx, sql.LevelDefault, fn)
}

// rows reads the outcome of a conditional write: whether it changed a row.
func rows(res *gorm.DB) (bool, error) {
	if res.Error != nil {
		return false, res.Error
	}
	return res.RowsAffected > 0, nil
}

// scanRaw runs q, a Raw query, and scans its rows into dest as GORM's Scan
// does, without Scan's recording of the statement for the logger: Scan
// writes every parameter into the SQL text first, whatever the logger, and
// an apply's record statement carries the whole plan's specs (it was a
// sixth of an apply's CPU). Every Raw query of the package is scanned so.
func scanRaw(q *gorm.DB, dest any) error {
	var found bool
	return scanRawFound(q, dest, &found)
}

// scanRawFound is scanRaw for a query of at most one row, telling whether
// there was one (found).
func scanRawFound(q *gorm.DB, dest any, found *bool) error {
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	if *found = rows.Next(); *found {
		if err := q.ScanRows(rows, dest); err != nil {
			return err
		}
	}
	return rows.Err()
}
