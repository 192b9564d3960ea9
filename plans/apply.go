package plans

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// ApplyOptions are the modes of one apply.
type ApplyOptions struct {
	// ValidateOnly runs every check inside the transaction and rolls back.
	ValidateOnly bool
	// IdempotencyFingerprint is the fingerprint of the Idempotency-Key
	// request, kept by the plan that it applies (§9: PostgreSQL is the
	// source of truth for a replay).
	IdempotencyFingerprint string
}

// ApplyResult is the outcome of a successful apply.
type ApplyResult struct {
	Plan *Plan
	// Replayed: the plan was applied before by the same Idempotency-Key
	// request, and nothing ran now.
	Replayed bool
}

// ApplyPermissions are the permissions an apply of p needs: config:write,
// the plan's read permissions and the write permission of every type with a
// change other than no_op.
func ApplyPermissions(p *Plan) []string {
	perms := readPerms(p.Types, config.PermConfigWrite)
	for _, c := range p.Changes {
		if c.Action != ActionNoOp {
			info, _ := config.LookupKind(c.Kind)
			perms = append(perms, info.WritePerm)
		}
	}
	return sortedUnique(perms)
}

// errRollback ends a validate-only transaction after every check passed.
var errRollback = errors.New("validate only: roll back")

// PendingApply is an apply whose plan is loaded and whose permissions hold
// (rows 3 to 5 of §6 answered): what the service needs to admit it (rows 6
// and 7, its rate and capacity limits) before it runs.
type PendingApply struct {
	s     *Service
	a     Actor
	plan  *Plan
	opt   ApplyOptions
	start time.Time
}

// PrepareApply loads the plan and answers rows 3 to 5: a retry of the
// Idempotency-Key request that applied the plan is answered from the plan
// itself (replay, and no pending apply: a replay consumes no rate limit),
// then the permissions.
func (s *Service) PrepareApply(ctx context.Context, a Actor, planID string, opt ApplyOptions) (_ *PendingApply, replay *ApplyResult, err error) {
	pa := &PendingApply{s: s, a: a, opt: opt, start: time.Now()}
	var result ApplyResult
	defer func() {
		if err != nil || replay != nil {
			pa.observe(result, err)
		}
	}()
	if pa.plan, err = s.loadPlan(ctx, a.EnvironmentID, planID); err != nil {
		return nil, nil, err
	}
	if replayed, err := retryOfKey(pa.plan, opt.IdempotencyFingerprint); err != nil {
		return nil, nil, err
	} else if replayed {
		result = ApplyResult{Plan: pa.plan, Replayed: true}
		return nil, &result, nil
	}
	if err := a.Require(ApplyPermissions(pa.plan)...); err != nil {
		return nil, nil, err
	}
	return pa, nil, nil
}

// Refused ends an apply that its admission refused with err (returned).
func (pa *PendingApply) Refused(err error) error {
	pa.observe(ApplyResult{}, err)
	return err
}

func (pa *PendingApply) observe(res ApplyResult, err error) {
	pa.s.hooks.observeApply(pa.start, pa.opt.ValidateOnly, &res, &err)
}

// Apply applies a stored plan to the actor's environment (§6) without
// admission limits: PrepareApply, then Run.
func (s *Service) Apply(ctx context.Context, a Actor, planID string, req *ApplyRequest, opt ApplyOptions) (ApplyResult, error) {
	pa, replay, err := s.PrepareApply(ctx, a, planID, opt)
	if err != nil || replay != nil {
		return config.Deref(replay), err
	}
	return pa.Run(ctx, req)
}

// Run runs an admitted apply with its body, answering the first error of
// the contract's table from row 8 on.
func (pa *PendingApply) Run(ctx context.Context, req *ApplyRequest) (result ApplyResult, err error) {
	defer func() { pa.observe(result, err) }()
	s, a, p := pa.s, pa.a, pa.plan
	if err := s.checkApplicable(ctx, a, p, pa.opt.ValidateOnly); err != nil {
		return ApplyResult{}, err
	}
	// The row between 9 and 10 (§17), answered in its order from the plan
	// as loaded; the apply's transaction counts again under the plan's lock.
	if need, got := p.ApprovalsRequired, approvalsReceived(p.Approvals); !pa.opt.ValidateOnly && got < need {
		return ApplyResult{}, errApprovalRequired(need, got)
	}
	if err := s.checkRequest(ctx, a, p, req); err != nil {
		var de *config.Error
		if errors.As(err, &de) && !pa.opt.ValidateOnly {
			s.recordRejection(ctx, a, p, de)
		}
		return ApplyResult{}, err
	}
	if pa.opt.ValidateOnly {
		err := s.db.InTx(ctx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
			if _, err := s.applyTx(ctx, tx, a, p, pa.opt, hold{}); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			return ApplyResult{}, err
		}
		return ApplyResult{Plan: p}, nil
	}
	// Whatever the apply's outcome, the plan is read whole from now on
	// (changesCache): an apply may give created connections their ids.
	s.changes.forget(p.key())
	return s.claimAndApply(ctx, a, p, req, pa.opt)
}

// checkRequest answers rows 10 to 12, before anything is claimed: the body
// against the plan, the protected deletions, the secrets that cannot be
// written yet.
func (s *Service) checkRequest(ctx context.Context, a Actor, p *Plan, req *ApplyRequest) error {
	confirmed, problems := req.Check(p)
	if len(problems) > 0 {
		return config.Problems(config.CodeValidationFailed, problems)
	}
	if err := s.checkConfirmations(ctx, a, p, confirmed); err != nil {
		return err
	}
	for _, c := range p.Changes {
		if c.RequiresSecret && !c.WritesMaterial {
			return &config.Error{Code: config.CodeNotImplemented,
				Detail: fmt.Sprintf("%s needs a social connection's client secret, which cannot be written yet; nothing was written", resourceRef(c.Kind, c.Key))}
		}
	}
	return nil
}

// claimAndApply applies the plan once. On PostgreSQL, a plan without OIDC
// material is claimed by the apply's own transaction (applyInTx); one with
// material is claimed first, under a lease that covers the federation
// writes after the commit (claimThenApply). SQLite has no row locks: there
// every plan is claimed first, and a concurrent apply is answered from the
// committed claim instead of waiting for the one writer.
func (s *Service) claimAndApply(ctx context.Context, a Actor, p *Plan, req *ApplyRequest, opt ApplyOptions) (ApplyResult, error) {
	if s.db.RowLocks() && !slices.ContainsFunc(p.Changes, func(c Change) bool { return c.WritesMaterial }) {
		return s.applyInTx(ctx, a, p, opt)
	}
	return s.claimThenApply(ctx, a, p, req, opt)
}

// applyInTx applies a plan that writes no OIDC material in one transaction
// that claims the plan itself: its first statement locks the plan's row,
// then the environment's (LockForApply), and its last records the changes,
// the applied plan, apply_started and apply_succeeded. The claim's own
// statement and commit are saved. Nothing is committed before the end, so
// other readers see the plan planned until it is applied; a concurrent
// apply of the same plan, on any replica, finds its row locked and answers
// as it does a claimed plan's: 409 config_plan_not_applicable (applying),
// or 409 idempotency_key_in_use for a retry of the same Idempotency-Key
// request (the transaction holds a lock of that key's fingerprint). A
// rejection in the transaction is recorded after its rollback (release);
// a lost COMMIT is resolved by the config.applied entry, as for a claimed
// plan.
func (s *Service) applyInTx(ctx context.Context, a Actor, p *Plan, opt ApplyOptions) (ApplyResult, error) {
	h := hold{started: eventRow(a, p.ID, "apply_started", nil)}
	defer s.releaseOnPanic(ctx, a, p, h)
	out, known, err := s.runApplyTx(ctx, a, p, opt, h)
	for waits := 0; known && errors.Is(err, configdb.ErrPlanBusy) && waits < maxReviewWaits; waits++ {
		again, werr := s.afterReview(ctx, p, waits)
		if werr != nil {
			return ApplyResult{}, werr
		}
		if !again {
			break
		}
		out, known, err = s.runApplyTx(ctx, a, p, opt, h)
	}
	if !known {
		return ApplyResult{}, err
	}
	if errors.Is(err, configdb.ErrPlanBusy) {
		return ApplyResult{}, busyPlan(ctx, s.db, opt.IdempotencyFingerprint)
	}
	if errors.Is(err, errNotClaimable) {
		replay, err := s.notClaimed(ctx, a, p, opt.IdempotencyFingerprint)
		if replay != nil {
			return ApplyResult{Plan: replay, Replayed: true}, nil
		}
		return ApplyResult{}, err
	}
	if err != nil {
		return ApplyResult{}, s.failedApply(ctx, a, p, h, err)
	}
	return ApplyResult{Plan: out.plan}, nil
}

// maxReviewWaits bounds how many times an apply's transaction runs again
// after finding its plan locked by a review (afterReview), and reviewWait
// how long it waits for one review: a review holds the plan for one short
// statement.
const (
	maxReviewWaits = 3
	reviewWait     = 2 * time.Second
)

// afterReview decides, after the apply's transaction of p found the plan
// locked (the waits-th time), whether to run it again: a review of the
// plan (§17) holds the plan's row as an apply's claim does, so the apply
// waits for the review's lock (AwaitReview) and runs again once it is
// free. The first time it runs again even when no review held the lock
// any more: one may have ended between the claim and the wait. Otherwise
// another apply holds the plan, and busyPlan answers. A review that
// outlasts reviewWait is answered as busy too.
func (s *Service) afterReview(ctx context.Context, p *Plan, waits int) (again bool, err error) {
	held, err := s.db.AwaitReview(ctx, p.key(), reviewWait)
	switch {
	case errors.Is(err, configdb.ErrPlanBusy):
		return false, nil
	case err != nil:
		return false, err
	}
	return held || waits == 0, nil
}

// busyPlan answers an apply whose transaction found its plan locked by
// another apply's transaction: that one may be the same Idempotency-Key
// request's (409 idempotency_key_in_use, as retryOfKey answers for a
// claimed plan), or another's (409 config_plan_not_applicable, applying).
func busyPlan(ctx context.Context, db *configdb.DB, fingerprint string) error {
	if fingerprint != "" {
		same, err := db.ApplyingWithKey(ctx, fingerprint)
		if err != nil {
			return err
		}
		if same {
			return errKeyInUse()
		}
	}
	return errBeingApplied()
}

// releaseOnPanic, deferred, ends the apply of p held by h when it panics
// (a bug), then panics on. A claimed plan must not stay applying until its
// lease passes: it returns to planned at once. In the apply transaction,
// that rolled back, a retry applies the plan; after the commit (writing
// OIDC material), a retry is a config_conflict as after a federation
// failure. Once the plan is applied its lease token is gone, and this
// changes nothing. A plan that the transaction was to claim itself did not
// move; either way its history says the apply was rejected.
func (s *Service) releaseOnPanic(ctx context.Context, a Actor, p *Plan, h hold) {
	if v := recover(); v != nil {
		_ = s.release(ctx, a, p, h, nil)
		panic(v)
	}
}

// runApplyTx runs the apply's transaction holding the plan by h, within
// half the apply lease, and resolves a COMMIT lost in flight
// (resolveApplyCommit): known is false when its outcome could not be
// learnt, and err is then the answer.
func (s *Service) runApplyTx(ctx context.Context, a Actor, p *Plan, opt ApplyOptions, h hold) (out *applied, known bool, err error) {
	applyCtx, cancel := context.WithTimeout(ctx, s.cfg.ApplyLease/2)
	defer cancel()
	run := func() (*applied, error) {
		return configdb.InTxV(applyCtx, s.db, sql.LevelRepeatableRead, func(tx *configdb.Tx) (*applied, error) {
			return s.applyTx(applyCtx, tx, a, p, opt, h)
		})
	}
	if out, err = run(); errors.Is(err, ErrCommitUnknown) {
		return commitResolver{s.db, s.log}.resolveApplyCommit(ctx, p, h.token, out, err, run)
	}
	return out, true, err
}

// claimThenApply claims the plan, runs the apply's transaction and, for a
// plan with OIDC material, the federation writes; a claim that does not
// apply is released.
func (s *Service) claimThenApply(ctx context.Context, a Actor, p *Plan, req *ApplyRequest, opt ApplyOptions) (ApplyResult, error) {
	token := config.RandomBase32(26)
	h := hold{token: token}
	if err := s.claim(ctx, a, p, token, opt.IdempotencyFingerprint); err != nil {
		var done *appliedByKey
		if errors.As(err, &done) {
			return ApplyResult{Plan: done.plan, Replayed: true}, nil
		}
		return ApplyResult{}, err
	}
	defer s.releaseOnPanic(ctx, a, p, h)
	out, known, err := s.runApplyTx(ctx, a, p, opt, h)
	if !known {
		return ApplyResult{}, err
	}
	if err != nil {
		return ApplyResult{}, s.failedApply(ctx, a, p, h, err)
	}
	if out.material {
		if err := s.writeMaterial(ctx, a, p, req, token, out); err != nil {
			return ApplyResult{}, err
		}
	}
	if out.plan != nil {
		return ApplyResult{Plan: out.plan}, nil
	}
	// The apply is done: answer it even if the client stopped waiting.
	res, err := s.loadPlan(context.WithoutCancel(ctx), a.EnvironmentID, p.ID)
	if err != nil {
		return ApplyResult{}, err
	}
	return ApplyResult{Plan: res}, nil
}

// failedApply ends an apply whose transaction failed with err (release),
// and answers it: a domain error as it is, the database's trouble as
// service_unavailable.
func (s *Service) failedApply(ctx context.Context, a Actor, p *Plan, h hold, err error) error {
	var de *config.Error
	if errors.As(err, &de) {
		return s.release(ctx, a, p, h, de)
	}
	s.log.ErrorContext(ctx, "apply failed", "plan_id", p.ID, "error", err)
	_ = s.release(ctx, a, p, h, nil)
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		return &config.Error{Code: config.CodeServiceUnavailable, Detail: "the directory is temporarily unavailable; nothing was written",
			Extra: map[string]any{"retry_after": 1}}
	}
	return err
}

// retryOfKey answers, from the plan itself, a retry of the Idempotency-Key
// request that applied p or is applying it (§9: PostgreSQL is the source of
// truth when the Redis record was lost or evicted): replay when p is
// applied, 409 idempotency_key_in_use while that request runs. fingerprint
// binds the API key, the Idempotency-Key and the request; "" means no key.
func retryOfKey(p *Plan, fingerprint string) (replay bool, err error) {
	if fingerprint == "" || p.keyFingerprint == nil || *p.keyFingerprint != fingerprint {
		return false, nil
	}
	switch p.Status {
	case StatusApplied:
		return true, nil
	case StatusApplying:
		return false, errKeyInUse()
	}
	return false, nil
}

func errKeyInUse() *config.Error {
	return &config.Error{Code: config.CodeIdempotencyKeyInUse, Detail: "a request with this Idempotency-Key is still applying the plan",
		Extra: map[string]any{"retry_after": 1}}
}

func errBeingApplied() *config.Error {
	return &config.Error{Code: config.CodeConfigPlanNotApplicable, Detail: "the plan is being applied", Extra: map[string]any{"plan_status": StatusApplying}}
}

// appliedByKey reports that a claim lost to the request that holds the
// same Idempotency-Key and has applied the plan since.
type appliedByKey struct{ plan *Plan }

func (e *appliedByKey) Error() string {
	return "plan " + e.plan.ID + " was applied by this Idempotency-Key"
}

// checkApplicable answers rows 8 and 9 from the plan's effective status.
func (s *Service) checkApplicable(ctx context.Context, a Actor, p *Plan, validateOnly bool) error {
	switch p.Status {
	case StatusPlanned:
		return nil
	case StatusExpired:
		if !validateOnly && Status(p.storedStatus) != StatusExpired {
			s.markExpired(ctx, a, p)
		}
		return &config.Error{Code: config.CodeConfigPlanExpired, Detail: "the plan's validity is over; create a new plan"}
	default:
		return &config.Error{Code: config.CodeConfigPlanNotApplicable, Detail: "the plan is " + string(p.Status) + " and cannot be applied",
			Extra: map[string]any{"plan_status": p.Status}}
	}
}

func (s *Service) markExpired(ctx context.Context, a Actor, p *Plan) {
	err := s.db.InStatementDetached(ctx, func(tx *configdb.Tx) error {
		_, err := tx.MarkExpired(ctx, p.key(), *eventRow(a, p.ID, "plan_expired", nil))
		return err
	})
	if err != nil {
		s.log.WarnContext(ctx, "marking a plan expired failed", "plan_id", p.ID, "error", err)
	}
}

// checkConfirmations answers row 11 from the token activity at apply time.
func (s *Service) checkConfirmations(ctx context.Context, a Actor, p *Plan, confirmed map[string]bool) error {
	recent, err := s.db.RecentTokens(ctx, a.EnvironmentID, deletedApplications(p.Changes), s.now().Add(-tokenWindow))
	if err != nil {
		return err
	}
	return checkDeletionsConfirmed(p.Changes, recent, confirmed)
}

// recordRejection records a rejection of a plan that was not claimed.
func (s *Service) recordRejection(ctx context.Context, a Actor, p *Plan, e *config.Error) {
	err := s.db.InStatementDetached(ctx, func(tx *configdb.Tx) error {
		return recordEvent(ctx, tx, a, p.ID, "apply_rejected", map[string]any{"code": e.Code})
	})
	if err != nil {
		s.log.WarnContext(ctx, "recording a rejection failed", "plan_id", p.ID, "error", err)
	}
}

// claim moves the plan planned → applying with a conditional update, so
// that of any number of concurrent applies, on any replica, one wins. An
// applying plan whose lease has passed can be claimed again. The plan keeps
// the Idempotency-Key fingerprint from the claim on, so that a retry of the
// same request that lost its Redis record is told the key is in use. The
// update and its apply_started event are one statement on PostgreSQL, run
// on its own: a lost connection leaves its outcome unknown as a lost
// COMMIT does, and resolveClaimCommit reads it.
func (s *Service) claim(ctx context.Context, a Actor, p *Plan, token, fingerprint string) error {
	var claimed bool
	err := s.db.InStatement(ctx, func(tx *configdb.Tx) error {
		var err error
		claimed, err = tx.ClaimPlan(ctx, p.key(), token, s.cfg.ApplyLease, nullable(fingerprint), *eventRow(a, p.ID, "apply_started", nil))
		return err
	})
	if errors.Is(err, ErrCommitUnknown) {
		return commitResolver{s.db, s.log}.resolveClaimCommit(ctx, p, token, err)
	}
	if err != nil {
		return err
	}
	if claimed {
		return nil
	}
	replay, err := s.notClaimed(ctx, a, p, fingerprint)
	if replay != nil {
		return &appliedByKey{plan: replay}
	}
	return err
}

// notClaimed answers an apply that could not claim p, from the plan as it
// is now: replay is the plan when the same Idempotency-Key request applied
// it; otherwise err says why it is not applicable, or that it is being
// applied.
func (s *Service) notClaimed(ctx context.Context, a Actor, p *Plan, fingerprint string) (replay *Plan, err error) {
	cur, err := s.loadPlan(ctx, p.EnvironmentID, p.ID)
	if err != nil {
		return nil, err
	}
	if replayed, err := retryOfKey(cur, fingerprint); replayed {
		return cur, nil
	} else if err != nil {
		return nil, err
	}
	if err := s.checkApplicable(ctx, a, cur, false); err != nil {
		return nil, err
	}
	return nil, errBeingApplied()
}

// release ends an apply that did not happen, held by h, and records why
// (e; nil: an internal error): a claimed plan returns to planned, or
// becomes conflicted on a config_conflict; a plan that the transaction was
// to claim itself did not move, and becomes conflicted on a
// config_conflict if it is still claimable. Its history gets apply_started
// (for the latter) and the rejection. It runs even when the request's
// context is gone.
func (s *Service) release(ctx context.Context, a Actor, p *Plan, h hold, e *config.Error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	conflict := e != nil && e.Code == config.CodeConfigConflict
	event := "apply_rejected"
	data := map[string]any{}
	if e != nil {
		data["code"] = e.Code
		if conflict {
			event = "apply_conflicted"
			data["errors"] = e.Errors
			// The versions may have moved because this very plan wrote its
			// records before the federation service failed: say so, since
			// "create a new plan" then means "to write the missing material".
			if h.token != "" {
				if failed, err := s.db.HasEvent(ctx, p.key(), "federation_failed"); err == nil && failed {
					e.Detail = "this plan's records were written before the federation service failed, so the plan cannot be applied again; " +
						"create a new plan of the same document: it writes only the missing OIDC material"
				}
			}
		}
	} else {
		data["code"] = config.CodeInternalError
	}
	ev := *eventRow(a, p.ID, event, data)
	err := s.db.InStatementDetached(ctx, func(tx *configdb.Tx) error {
		var err error
		switch {
		case h.token != "" && conflict:
			_, err = tx.MarkConflicted(ctx, p.key(), h.token, ev)
		case h.token != "":
			_, err = tx.RejectClaim(ctx, p.key(), h.token, ev)
		case conflict:
			_, err = tx.ConflictApply(ctx, p.key(), *h.started, ev)
		default:
			err = tx.RejectApply(ctx, *h.started, ev)
		}
		return err
	})
	if err != nil {
		s.log.WarnContext(ctx, "releasing a plan failed; its lease will", "plan_id", p.ID, "error", err)
	}
	if e == nil {
		return nil
	}
	return e
}

func kindStrings(ks []config.Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
