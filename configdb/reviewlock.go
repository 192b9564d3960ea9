package configdb

import (
	"context"
	"database/sql"
	"strconv"
	"time"
)

// A review (an approval or a rejection, §17) locks its plan's row for one
// statement, as an apply's transaction does when it claims the plan. On
// PostgreSQL the review first takes a transaction-scoped advisory lock
// named by the plan (lockReview), so that an apply whose claim finds the
// row locked (ErrPlanBusy) can tell a review, which ends in a moment, from
// an apply, which answers 409 applying: AwaitReview waits for the review.

// reviewLock prefixes the name of a review's advisory lock.
const reviewLock = "keenauth review "

// reviewLockName names the advisory lock of the reviews of the plan k.
func reviewLockName(k PlanKey) string {
	return reviewLock + k.EnvironmentID + " " + k.ID
}

// lockReview takes the advisory lock of the reviews of k until the
// transaction ends (PostgreSQL; SQLite has one writer at a time and no
// row locks, so nothing to tell apart). Two reviews of one plan wait for
// each other here instead of on the row.
func (tx *Tx) lockReview(ctx context.Context, k PlanKey) error {
	if tx.sqlite {
		return nil
	}
	return interpretError(tx.q(ctx).Exec("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", reviewLockName(k)).Error)
}

// AwaitReview waits, at most wait, until no review of the plan k holds its
// lock, and reports whether one held it when asked (held). An apply whose
// claim found the plan's row locked calls it (with no transaction of its
// own open): when a review held the row, the apply runs again once the
// review has ended. A review still holding its lock after wait is
// ErrPlanBusy (PostgreSQL's lock_timeout); on SQLite nothing is held.
func (d *DB) AwaitReview(ctx context.Context, k PlanKey, wait time.Duration) (held bool, err error) {
	if d.sqlite {
		return false, nil
	}
	name := reviewLockName(k)
	// Asked on its own, the lock is given back as the statement ends: no
	// transaction for the usual answer (no review: another apply).
	var free bool
	if err := d.q(ctx).Raw("SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))", name).Row().Scan(&free); err != nil || free {
		return false, interpretError(err)
	}
	err = d.InTx(ctx, sql.LevelReadCommitted, func(tx *Tx) error {
		ms := strconv.FormatInt(max(wait.Milliseconds(), 1), 10) + "ms"
		if err := tx.q(ctx).Exec("SELECT set_config('lock_timeout', ?, true)", ms).Error; err != nil {
			return interpretError(err)
		}
		return interpretError(tx.q(ctx).Exec("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", name).Error)
	})
	return true, err
}
