package configdb

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// Sentinel errors of the storage edge.
var (
	// ErrNotFound: the row does not exist (or belongs to another environment).
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: the database cannot be reached or timed out.
	ErrUnavailable = errors.New("database unavailable")
	// ErrUnstorableText: text PostgreSQL cannot store (a NUL character).
	// The service refuses it when it reads a body; this is the net behind
	// that.
	ErrUnstorableText = errors.New("the request holds text that cannot be stored (a NUL character)")
	// ErrCommitUnknown: the connection was lost while COMMIT was in flight,
	// so the transaction may or may not have committed.
	ErrCommitUnknown = errors.New("commit outcome unknown")
	// ErrPlanBusy: an apply's transaction found the plan it was to claim
	// locked by another apply's transaction (LockForApply), or a review
	// held it longer than AwaitReview waits.
	ErrPlanBusy = errors.New("the plan is being applied")
	// errRetry: a serialization failure or deadlock; the transaction is run again.
	errRetry = errors.New("serialization failure")
)

// ErrRetry returns an error that makes InTx run the transaction again: a
// conditional write found the row changed by a concurrent transaction.
func ErrRetry(what string) error { return fmt.Errorf("%s: %w", what, errRetry) }

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
			return fmt.Errorf("%w: %w", ErrUnstorableText, err)
		case "40001", "40P01":
			return fmt.Errorf("%w: %w", errRetry, err)
		case "55P03": // lock_not_available: LockForApply's NOWAIT, AwaitReview's lock_timeout
			return fmt.Errorf("%w: %w", ErrPlanBusy, err)
		}
		if lostSQLState(pe.Code) {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	if e := interpretSQLite(err); e != nil {
		return e
	}
	if connectionLost(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// interpretErrorKeep translates the error of a transaction: an error
// already translated by a loader is kept as it is, and so is a domain
// error, which is no driver's.
func interpretErrorKeep(err error) error {
	if err == nil || errors.Is(err, errRetry) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnavailable) ||
		errors.Is(err, ErrUnstorableText) || errors.Is(err, ErrPlanBusy) {
		return err
	}
	return interpretError(err)
}

// isNotFound reports whether err is ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
