package plans

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/keenauth/configplans/configdb"
)

// ApplyOptions are the collaborators and modes of one apply.
type ApplyOptions struct {
	// ValidateOnly runs every check inside the transaction and rolls back.
	ValidateOnly bool
	// Admit runs the rate and capacity checks (rows 6 and 7) once the plan
	// and the permissions are known; it returns the release of what it took.
	Admit func(ctx context.Context) (release func(), err error)
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
	perms := readPerms(p.Types, PermConfigWrite)
	for _, c := range p.Changes {
		if c.Action != ActionNoOp {
			info, _ := LookupKind(c.Kind)
			perms = append(perms, info.WritePerm)
		}
	}
	return sortedUnique(perms)
}

// errRollback ends a validate-only transaction after every check passed.
var errRollback = errors.New("validate only: roll back")

// Apply applies a stored plan to the actor's environment (§6), answering
// the first error of the contract's table that applies.
func (s *Service) Apply(ctx context.Context, a Actor, planID string, req *ApplyRequest, opt ApplyOptions) (result ApplyResult, err error) {
	defer s.observeApply(time.Now(), opt.ValidateOnly, &result, &err)
	p, err := s.loadPlan(ctx, a.EnvironmentID, planID)
	if err != nil {
		return ApplyResult{}, err
	}
	// Row 3 from PostgreSQL, before the permissions and the rate limits: a
	// replay consumes no rate limit.
	if replay, err := retryOfKey(p, opt.IdempotencyFingerprint); replay || err != nil {
		return ApplyResult{Plan: p, Replayed: replay}, err
	}
	if err := a.Require(ApplyPermissions(p)...); err != nil {
		return ApplyResult{}, err
	}
	if opt.Admit != nil {
		release, err := opt.Admit(ctx)
		if err != nil {
			return ApplyResult{}, err
		}
		defer release()
	}
	if err := s.checkApplicable(ctx, a, p, opt.ValidateOnly); err != nil {
		return ApplyResult{}, err
	}
	confirmed, problems := req.validate(p)
	if len(problems) > 0 {
		return ApplyResult{}, s.reject(ctx, a, p, opt, Problems(CodeValidationFailed, problems))
	}
	if err := s.checkConfirmations(ctx, a, p, confirmed); err != nil {
		var de *Error
		if errors.As(err, &de) {
			return ApplyResult{}, s.reject(ctx, a, p, opt, de)
		}
		return ApplyResult{}, err
	}
	for _, c := range p.Changes {
		if c.RequiresSecret && !c.WritesMaterial {
			return ApplyResult{}, s.reject(ctx, a, p, opt, &Error{Code: CodeNotImplemented,
				Detail: fmt.Sprintf("%s needs a social connection's client secret, which cannot be written yet; nothing was written", resourceRef(c.Kind, c.Key))})
		}
	}
	if opt.ValidateOnly {
		err := s.db.InTx(ctx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
			if _, err := s.applyTx(ctx, tx, a, p, opt, ""); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			return ApplyResult{}, err
		}
		return ApplyResult{Plan: p}, nil
	}

	token := randomBase32(26)
	if err := s.claim(ctx, a, p, token, opt.IdempotencyFingerprint); err != nil {
		var done *appliedByKey
		if errors.As(err, &done) {
			return ApplyResult{Plan: done.plan, Replayed: true}, nil
		}
		return ApplyResult{}, err
	}
	defer func() {
		if v := recover(); v != nil {
			// A panic (a bug) must not leave the plan applying until its
			// lease passes: it returns to planned at once. In the apply
			// transaction, that rolled back, a retry applies the plan; after
			// the commit (writing OIDC material), a retry is a
			// config_conflict as after a federation failure. Once the plan
			// is applied its lease token is gone, and this changes nothing.
			_ = s.release(ctx, a, p, token, nil)
			panic(v)
		}
	}()
	applyCtx, cancel := context.WithTimeout(ctx, s.cfg.ApplyLease/2)
	defer cancel()
	var out *applied
	err = s.db.InTx(applyCtx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
		var err error
		out, err = s.applyTx(applyCtx, tx, a, p, opt, token)
		return err
	})
	if err != nil {
		var de *Error
		if errors.As(err, &de) {
			return ApplyResult{}, s.release(ctx, a, p, token, de)
		}
		s.log.ErrorContext(ctx, "apply failed", "plan_id", p.ID, "error", err)
		_ = s.release(ctx, a, p, token, nil)
		if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			return ApplyResult{}, &Error{Code: CodeServiceUnavailable, Detail: "the directory is temporarily unavailable; nothing was written",
				Extra: map[string]any{"retry_after": 1}}
		}
		return ApplyResult{}, err
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
		return false, &Error{Code: CodeIdempotencyKeyInUse, Detail: "a request with this Idempotency-Key is still applying the plan",
			Extra: map[string]any{"retry_after": 1}}
	}
	return false, nil
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
		if !validateOnly && p.storedStatus != StatusExpired {
			s.markExpired(ctx, a, p)
		}
		return &Error{Code: CodeConfigPlanExpired, Detail: "the plan's validity is over; create a new plan"}
	default:
		return &Error{Code: CodeConfigPlanNotApplicable, Detail: "the plan is " + p.Status + " and cannot be applied",
			Extra: map[string]any{"plan_status": p.Status}}
	}
}

func (s *Service) markExpired(ctx context.Context, a Actor, p *Plan) {
	err := s.db.InTxDetached(ctx, func(tx *configdb.Tx) error {
		if marked, err := tx.MarkExpired(ctx, p.key()); err != nil || !marked {
			return err
		}
		return recordEvent(ctx, tx, a, p.ID, "plan_expired", nil)
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

// reject records a rejection of a plan that was not claimed.
func (s *Service) reject(ctx context.Context, a Actor, p *Plan, opt ApplyOptions, e *Error) error {
	if opt.ValidateOnly {
		return e
	}
	err := s.db.InTxDetached(ctx, func(tx *configdb.Tx) error {
		return recordEvent(ctx, tx, a, p.ID, "apply_rejected", map[string]any{"code": e.Code})
	})
	if err != nil {
		s.log.WarnContext(ctx, "recording a rejection failed", "plan_id", p.ID, "error", err)
	}
	return e
}

// claim moves the plan planned → applying with a conditional update, so
// that of any number of concurrent applies, on any replica, one wins. An
// applying plan whose lease has passed can be claimed again. The plan keeps
// the Idempotency-Key fingerprint from the claim on, so that a retry of the
// same request that lost its Redis record is told the key is in use.
func (s *Service) claim(ctx context.Context, a Actor, p *Plan, token, fingerprint string) error {
	var claimed bool
	err := s.db.InTx(ctx, sql.LevelReadCommitted, func(tx *configdb.Tx) error {
		var err error
		if claimed, err = tx.ClaimPlan(ctx, p.key(), token, s.cfg.ApplyLease, nullable(fingerprint)); err != nil || !claimed {
			return err
		}
		return recordEvent(ctx, tx, a, p.ID, "apply_started", nil)
	})
	if err != nil {
		return err
	}
	if claimed {
		return nil
	}
	cur, err := s.loadPlan(ctx, p.EnvironmentID, p.ID)
	if err != nil {
		return err
	}
	if replay, err := retryOfKey(cur, fingerprint); replay {
		return &appliedByKey{plan: cur}
	} else if err != nil {
		return err
	}
	if err := s.checkApplicable(ctx, a, cur, false); err != nil {
		return err
	}
	return &Error{Code: CodeConfigPlanNotApplicable, Detail: "the plan is being applied", Extra: map[string]any{"plan_status": StatusApplying}}
}

// release ends a claim that did not apply: the plan returns to planned, or
// becomes conflicted on a config_conflict, and the rejection is recorded.
// It runs even when the request's context is gone.
func (s *Service) release(ctx context.Context, a Actor, p *Plan, token string, e *Error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	end, event := (*configdb.Tx).ReleasePlan, "apply_rejected"
	data := map[string]any{}
	if e != nil {
		data["code"] = e.Code
		if e.Code == CodeConfigConflict {
			end, event = (*configdb.Tx).MarkConflicted, "apply_conflicted"
			data["errors"] = e.Errors
			// The versions may have moved because this very plan wrote its
			// records before the federation service failed: say so, since
			// "create a new plan" then means "to write the missing material".
			if failed, err := s.db.HasEvent(ctx, p.key(), "federation_failed"); err == nil && failed {
				e.Detail = "this plan's records were written before the federation service failed, so the plan cannot be applied again; " +
					"create a new plan of the same document: it writes only the missing OIDC material"
			}
		}
	} else {
		data["code"] = CodeInternalError
	}
	err := s.db.InTxDetached(ctx, func(tx *configdb.Tx) error {
		if ended, err := end(tx, ctx, p.key(), token); err != nil || !ended {
			return err
		}
		return recordEvent(ctx, tx, a, p.ID, event, data)
	})
	if err != nil {
		s.log.WarnContext(ctx, "releasing a plan failed; its lease will", "plan_id", p.ID, "error", err)
	}
	if e == nil {
		return nil
	}
	return e
}

func kindStrings(ks []Kind) []string {
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
