package plans

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// A connection lost while COMMIT was in flight leaves the outcome of a
// transaction unknown: the server may have committed it and lost only the
// answer. An apply must not answer 503 for a plan that is in fact applied
// (nor 500), and must not release a claim whose writes committed. So it
// asks the database, on a fresh connection, what happened.

// commitResolver asks the storage, on a fresh connection, what became of a
// transaction whose COMMIT was lost in flight.
type commitResolver struct {
	db  *configdb.DB
	log *slog.Logger
}

// resolveTimeout bounds the reads that resolve an unknown commit; they run
// even when the client stopped waiting, as the release does.
const resolveTimeout = 5 * time.Second

// maxCommitUnknown bounds how many times an apply whose commit was lost and
// found not to have happened runs its transaction again.
const maxCommitUnknown = 3

// resolveApplyCommit resolves an apply transaction whose COMMIT was in
// flight when its connection was lost (err is ErrCommitUnknown). The
// transaction's config.applied entry, written with every change, says
// whether it committed:
//   - committed: out is what it wrote, and the apply goes on as if COMMIT
//     had answered (200 with the applied plan, or the material writes);
//   - not committed and the plan still applying under token: nothing was
//     written, and the transaction runs again (rerun) on a fresh connection,
//     a bounded number of times; still unknown after that, the error stays
//     and the caller releases the claim;
//   - not committed and the claim lost, or the database cannot be read:
//     503, and the claim is left to its lease (a release could undo writes
//     it cannot see).
//
// With token "", the transaction was to claim the plan itself
// (applyInTx): SettledClaim's read only waits for it to end, and not
// committed, it runs again whatever the plan's state, since a run that
// finds the plan no longer claimable answers why.
//
// known is false in the last case: the caller answers err and must not
// release the claim.
func (s commitResolver) resolveApplyCommit(ctx context.Context, p *Plan, token string, out *applied, err error,
	rerun func() (*applied, error)) (_ *applied, known bool, _ error) {
	for tries := 1; errors.Is(err, ErrCommitUnknown); tries++ {
		committed, claimed, rerr := s.applyCommitted(ctx, p, token, out)
		switch {
		case rerr != nil:
			s.log.WarnContext(ctx, "the outcome of an apply's commit is unknown; its lease will settle the plan", "plan_id", p.ID, "error", rerr)
			return nil, false, unavailableApply("the directory became unavailable while the apply committed; retry to learn its outcome")
		case committed:
			s.log.InfoContext(ctx, "an apply's commit answer was lost, and the apply had committed", "plan_id", p.ID)
			return out, true, nil
		case !claimed && token != "":
			return nil, false, unavailableApply("the directory became unavailable while the apply committed; nothing was written")
		case tries >= maxCommitUnknown:
			return nil, true, err
		}
		out, err = rerun()
	}
	return out, true, err
}

// applyCommitted reads, on a fresh connection, whether the apply
// transaction that wrote out committed, and whether the plan is still
// applying under token.
func (s commitResolver) applyCommitted(ctx context.Context, p *Plan, token string, out *applied) (committed, claimed bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	err = s.readFresh(ctx, func() error {
		var err error
		if claimed, err = s.db.SettledClaim(ctx, p.key(), token); err != nil {
			return err
		}
		committed, err = s.db.HasLog(ctx, p.EnvironmentID, out.logID)
		return err
	})
	return committed, claimed, err
}

// resolveClaimCommit resolves a claim whose COMMIT was in flight when its
// connection was lost: the plan applying under token means the claim
// committed. Otherwise nothing was claimed, and the answer is err (503).
func (s commitResolver) resolveClaimCommit(ctx context.Context, p *Plan, token string, err error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	var claimed bool
	rerr := s.readFresh(ctx, func() (err error) {
		claimed, err = s.db.SettledClaim(ctx, p.key(), token)
		return err
	})
	if rerr == nil && claimed {
		return nil
	}
	if rerr != nil {
		s.log.WarnContext(ctx, "the outcome of an apply's claim is unknown; its lease will settle the plan", "plan_id", p.ID, "error", rerr)
	}
	return err
}

// readFresh runs read until it gets an answer of the database, retrying a
// lost connection (the pool hands out a fresh one) until ctx ends.
func (s commitResolver) readFresh(ctx context.Context, read func() error) error {
	for attempt := 1; ; attempt++ {
		err := read()
		if !errors.Is(err, ErrUnavailable) || ctx.Err() != nil || attempt >= s.db.MaxTxAttempts() {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		case <-time.After(time.Duration(attempt*attempt) * 10 * time.Millisecond):
		}
	}
}

func unavailableApply(detail string) *config.Error {
	return &config.Error{Code: config.CodeServiceUnavailable, Detail: detail, Extra: map[string]any{"retry_after": 1}}
}
