package plans

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/revisions"
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
			if _, err := s.applyTx(ctx, tx, a, p, req, opt, ""); err != nil {
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
		out, err = s.applyTx(applyCtx, tx, a, p, req, opt, token)
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

// checkConfirmations answers row 11 from the state at apply time.
func (s *Service) checkConfirmations(ctx context.Context, a Actor, p *Plan, confirmed map[string]bool) error {
	var apps []string
	for _, c := range p.Changes {
		if c.Action == ActionDelete && c.Kind == KindApplication {
			apps = append(apps, c.Key)
		}
	}
	recent, err := s.db.RecentTokens(ctx, a.EnvironmentID, apps, s.now().Add(-tokenWindow))
	if err != nil {
		return err
	}
	var missing []string
	for _, c := range p.Changes {
		ref := resourceRef(c.Kind, c.Key)
		if c.Action == ActionDelete && (c.Kind == KindConnection || (c.Kind == KindApplication && recent[c.Key])) && !confirmed[ref] {
			missing = append(missing, ref)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &Error{Code: CodeDeletionNotConfirmed, Detail: fmt.Sprintf("%d protected deletion(s) must be confirmed in confirm_deletions", len(missing)),
		Extra: map[string]any{"unconfirmed_deletions": missing}}
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

// applied is what the apply transaction wrote.
type applied struct {
	material   bool
	connIDs    map[string]string // connection key → id, for the material writes
	revisionID *string
	// plan is the plan as the transaction left it, when it is applied (no
	// OIDC material to write): the answer, without reading it back.
	plan *Plan
}

// applyTx re-reads the target inside the transaction, runs checks 13 to 18
// and, unless validating only (token ""), writes every change, the revision,
// the management log and the plan's state.
func (s *Service) applyTx(ctx context.Context, tx *configdb.Tx, a Actor, p *Plan, req *ApplyRequest, opt ApplyOptions, token string) (*applied, error) {
	// Lock the environment first: the applies of one environment never
	// interleave (see LockEnvironment).
	if _, err := tx.LockEnvironment(ctx, a.EnvironmentID); err != nil {
		return nil, err
	}
	n := newNeed()
	for _, c := range p.Changes {
		if c.Action == ActionNoOp {
			// A no-op names its resource only for the version check.
			n.key(c.Kind, c.Key)
			continue
		}
		n.resource(c.Kind, c.Key, c.Spec)
	}
	cur, err := n.load(ctx, tx.Reader, a.EnvironmentID, false)
	if err != nil {
		return nil, err
	}
	gens, err := loadGenerations(ctx, tx.Reader, a.EnvironmentID, append(slices.Clone(p.Types), p.ReferencingTypes...))
	if err != nil {
		return nil, err
	}
	post := &postState{cur: cur, specs: map[string]json.RawMessage{}}
	for _, c := range p.Changes {
		if c.Action != ActionNoOp {
			post.specs[resourceRef(c.Kind, c.Key)] = c.Spec
		}
	}

	// Row 13: the target changed after planning.
	var conflicts []FieldError
	for i, c := range p.Changes {
		v := 0
		if r := cur.get(c.Kind, c.Key); r != nil {
			v = r.Version
		}
		if v != p.versions[resourceRef(c.Kind, c.Key)] {
			conflicts = append(conflicts, FieldError{Pointer: fmt.Sprintf("/changes/%d", i), Code: CodeVersionChanged,
				Detail: fmt.Sprintf("%s is at version %d, the plan was made at version %d", resourceRef(c.Kind, c.Key), v, p.versions[resourceRef(c.Kind, c.Key)])})
		}
	}
	for i, k := range p.Types {
		if gens[k] != p.fingerprints[k] {
			conflicts = append(conflicts, FieldError{Pointer: fmt.Sprintf("/types/%d", i), Code: CodeTypeChanged,
				Detail: fmt.Sprintf("the %s resources changed after planning", k)})
		}
	}
	for i, k := range p.ReferencingTypes {
		if gens[k] != p.fingerprints[k] {
			conflicts = append(conflicts, FieldError{Pointer: fmt.Sprintf("/referencing_types/%d", i), Code: CodeTypeChanged,
				Detail: fmt.Sprintf("the %s resources, which reference a planned type, changed after planning", k)})
		}
	}
	for i, c := range p.Changes {
		switch {
		case c.Action == ActionCreate || c.Action == ActionUpdate:
			for _, ref := range References(c.Kind, c.Key, c.Spec) {
				if _, detail, ok := post.resolve(ref); !ok {
					conflicts = append(conflicts, FieldError{Pointer: fmt.Sprintf("/changes/%d", i), Code: CodeReferenceBroken, Detail: detail})
				}
			}
		case c.Action == ActionDelete && c.Kind != KindConnection:
			if refs := post.referrers(c.Kind, c.Key); len(refs) > 0 {
				conflicts = append(conflicts, FieldError{Pointer: fmt.Sprintf("/changes/%d", i), Code: CodeReferenceBroken,
					Detail: fmt.Sprintf("%s is now referenced by %s", resourceRef(c.Kind, c.Key), refs[0])})
			}
		}
	}
	if len(conflicts) > 0 {
		return nil, &Error{Code: CodeConfigConflict, Detail: "the configuration changed after the plan was made; create a new plan", Errors: conflicts}
	}

	// Row 14: a unique value another resource holds. The holders of the
	// unique values of a kind are indexed once, in key order: scanning the
	// kind for every change made an apply quadratic in its size.
	var dups []FieldError
	holders := map[Kind]map[uniqueKey][]string{}
	for i, c := range p.Changes {
		if c.Action != ActionCreate && c.Action != ActionUpdate {
			continue
		}
		for _, u := range UniqueValues(c.Kind, c.Spec) {
			if holders[c.Kind] == nil {
				holders[c.Kind] = post.uniqueHolders(c.Kind)
			}
			for _, other := range holders[c.Kind][u.compared()] {
				if other != c.Key {
					dups = append(dups, FieldError{Pointer: fmt.Sprintf("/changes/%d/spec/%s", i, u.Field), Code: CodeDuplicate,
						Detail: fmt.Sprintf("%s %s is used by %s", u.Field, quoteShort(u.Value), resourceRef(c.Kind, other))})
				}
			}
		}
	}
	if len(dups) > 0 {
		return nil, &Error{Code: CodeConflict, Detail: "another resource already uses a unique value of this plan", Errors: dups}
	}

	// Row 15: a connection to delete is still referenced.
	var inUse []FieldError
	for i, c := range p.Changes {
		if c.Action == ActionDelete && c.Kind == KindConnection {
			for _, ref := range post.referrers(c.Kind, c.Key) {
				inUse = append(inUse, FieldError{Pointer: fmt.Sprintf("/changes/%d", i), Code: CodeInUse,
					Detail: fmt.Sprintf("connection %s is still used by %s", quoteShort(c.Key), ref)})
			}
		}
	}
	if len(inUse) > 0 {
		return nil, &Error{Code: CodeConnectionInUse, Detail: "a connection to delete is still referenced", Errors: inUse}
	}

	// Row 16: active enterprise connections need a successful test of the
	// material they will have.
	if untested, err := s.untestedConnections(ctx, tx.Reader, a.EnvironmentID, p, cur); err != nil {
		return nil, err
	} else if len(untested) > 0 {
		return nil, &Error{Code: CodeConnectionTestRequired, Detail: "an enterprise connection can be active only after a successful connection test of its material", Errors: untested}
	}

	// Row 17: the environment's policies, as they are now.
	policies, err := loadPolicies(ctx, tx.Reader, a.EnvironmentID)
	if err != nil {
		return nil, err
	}
	var violations []FieldError
	for i, c := range p.Changes {
		if c.Action == ActionCreate || c.Action == ActionUpdate {
			violations = append(violations, CheckPolicies(policies, c.Kind, c.Spec, fmt.Sprintf("/changes/%d/spec", i))...)
		}
	}
	if len(violations) > 0 {
		return nil, Problems(CodePolicyConflict, violations)
	}

	// Row 18: the revision kept for the changes.
	now := tx.Now
	var revRes []revisions.Resource
	counts := revisions.Counts{}
	for _, c := range p.Changes {
		r := cur.get(c.Kind, c.Key)
		rr := revisions.Resource{Kind: string(c.Kind), Key: c.Key, Action: c.Action}
		if r != nil {
			v := r.Version
			rr.VersionBefore, rr.SpecBefore, rr.ResourceIDBefore = &v, json.RawMessage(r.Spec), r.ResourceID
		}
		switch c.Action {
		case ActionCreate:
			counts.Created++
		case ActionUpdate:
			counts.Updated++
		case ActionDelete:
			counts.Deleted++
		default:
			counts.Unchanged++
			continue
		}
		revRes = append(revRes, rr)
	}
	revBytes, err := revisions.Encode(revRes)
	if err != nil {
		return nil, err
	}
	if len(revBytes) > MaxPlanBytes {
		return nil, &Error{Code: CodeConfigDocumentTooLarge,
			Detail: fmt.Sprintf("the revision of these changes would take %d bytes, over the limit of %d; plan fewer types", len(revBytes), MaxPlanBytes)}
	}

	out := &applied{connIDs: map[string]string{}}
	for _, c := range p.Changes {
		if c.WritesMaterial {
			out.material = true
		}
	}
	// Row 19: OIDC material needs the federation service.
	if out.material && s.hooks.Federation == nil {
		return nil, &Error{Code: CodeServiceUnavailable, Detail: "no federation service is configured for OIDC material; nothing was written",
			Extra: map[string]any{"retry_after": 60}}
	}
	if s.hooks.BeforeApplyWrite != nil {
		if err := s.hooks.BeforeApplyWrite(tx.Gorm()); err != nil {
			return nil, err
		}
	}
	if err := s.write(ctx, tx, a, p, cur, out); err != nil {
		return nil, err
	}
	if token == "" {
		return out, nil
	}

	// The revision and the management log, in the same transaction.
	if len(revRes) > 0 {
		id := NewID(PrefixRevision)
		out.revisionID = &id
		if err := tx.RecordRevision(revisions.Revision{EnvironmentID: a.EnvironmentID, ID: id, PlanID: p.ID,
			Types: kindStrings(p.Types), Counts: counts, CreatedAt: now, ExpiresAt: now.Add(s.cfg.RevisionMaxAge)}, revBytes); err != nil {
			return nil, err
		}
		n, err := tx.PruneRevisions(a.EnvironmentID, s.cfg.RevisionLimit)
		if err != nil {
			return nil, err
		}
		if n > 0 && s.hooks.OnRevisionsPruned != nil {
			s.hooks.OnRevisionsPruned(n)
		}
	}
	logs := []configdb.LogRow{{EnvironmentID: a.EnvironmentID, ID: NewID(PrefixLog), Type: "config.applied", CreatedAt: now,
		APIKeyID: a.APIKeyID, RequestID: a.RequestID, PlanID: &p.ID, RevisionID: out.revisionID, Data: mustJSON(counts)}}
	for _, c := range p.Changes {
		if c.Action == ActionNoOp {
			continue
		}
		v := 1
		if r := cur.get(c.Kind, c.Key); r != nil {
			v = r.Version
			if c.Action == ActionUpdate {
				v++
			}
		}
		typ := map[string]string{ActionCreate: "created", ActionUpdate: "updated", ActionDelete: "deleted"}[c.Action]
		logs = append(logs, configdb.LogRow{EnvironmentID: a.EnvironmentID, ID: NewID(PrefixLog), Type: string(c.Kind) + "." + typ, CreatedAt: now,
			APIKeyID: a.APIKeyID, RequestID: a.RequestID, PlanID: &p.ID, RevisionID: out.revisionID,
			Data: mustJSON(map[string]any{"kind": c.Kind, "key": c.Key, "version": v})})
	}
	if err := tx.RecordLogs(ctx, logs); err != nil {
		return nil, err
	}

	rec := configdb.AppliedPlan{RevisionID: out.revisionID, AppliedBy: a.APIKeyID, Fingerprint: nullable(opt.IdempotencyFingerprint)}
	// A created connection's change shows its new id from now on (§5).
	changes := p.Changes
	if len(out.connIDs) > 0 {
		changes = slices.Clone(p.Changes)
		for i, c := range changes {
			if id, ok := out.connIDs[c.Key]; ok && c.Kind == KindConnection {
				changes[i].ResourceID = json.RawMessage(mustJSON(id))
			}
		}
		rec.Changes = mustJSON(changeRecords(changes))
	}
	if !out.material {
		rec.Finished = true
		res := *p
		appliedAt := Time(now)
		res.Status, res.AppliedAt, res.RevisionID, res.Changes = StatusApplied, &appliedAt, out.revisionID, changes
		out.plan = &res
	}
	if recorded, err := tx.RecordApply(ctx, p.key(), token, rec); err != nil {
		return nil, err
	} else if !recorded {
		return nil, &Error{Code: CodeConfigPlanNotApplicable, Detail: "the plan's apply lease was lost; nothing was written",
			Extra: map[string]any{"plan_status": StatusApplying}}
	}
	if !out.material {
		if err := recordEvent(ctx, tx, a, p.ID, "apply_succeeded", map[string]any{"revision_id": out.revisionID, "counts": counts}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// write writes every change and bumps the generation of each written type
// and of the environment.
func (s *Service) write(ctx context.Context, tx *configdb.Tx, a Actor, p *Plan, cur state, out *applied) error {
	var creates []configdb.Resource
	written := map[Kind]bool{}
	for _, c := range p.Changes {
		r := cur.get(c.Kind, c.Key)
		switch c.Action {
		case ActionCreate:
			id := ""
			if c.Kind == KindConnection {
				// A restored connection keeps the id the plan names.
				if json.Unmarshal(c.ResourceID, &id) != nil || !ValidID(PrefixConnection, id) {
					id = NewID(PrefixConnection)
				}
				out.connIDs[c.Key] = id
			}
			creates = append(creates, configdb.Resource{EnvironmentID: a.EnvironmentID, Kind: string(c.Kind), Key: c.Key, ResourceID: id,
				Version: 1, Spec: configdb.JSON(c.Spec), DisplayNameKey: displayNameKey(c.Kind, c.Spec)})
		case ActionUpdate:
			if err := tx.UpdateResource(ctx, a.EnvironmentID, string(c.Kind), c.Key, r.Version, configdb.JSON(c.Spec), displayNameKey(c.Kind, c.Spec)); err != nil {
				return err
			}
			if c.Kind == KindConnection {
				out.connIDs[c.Key] = r.ResourceID
			}
		case ActionDelete:
			if err := tx.DeleteResource(ctx, a.EnvironmentID, string(c.Kind), c.Key, r.Version); err != nil {
				return err
			}
		default:
			continue
		}
		written[c.Kind] = true
	}
	if err := tx.CreateResources(ctx, creates); err != nil {
		return err
	}
	kinds := make([]string, 0, len(written))
	for k := range written {
		kinds = append(kinds, string(k))
	}
	return tx.BumpGenerations(ctx, a.EnvironmentID, kinds)
}

// untestedConnections lists the changes that create an active enterprise
// connection or activate one without a successful test of the material it
// will have.
func (s *Service) untestedConnections(ctx context.Context, db configdb.Reader, envID string, p *Plan, cur state) ([]FieldError, error) {
	var out []FieldError
	for i, c := range p.Changes {
		if c.Kind != KindConnection || (c.Action != ActionCreate && c.Action != ActionUpdate) {
			continue
		}
		v := viewConnection(c.Spec)
		if v.Type != "enterprise" || !v.Active {
			continue
		}
		r := cur.get(c.Kind, c.Key)
		if r != nil {
			// Row 16 names creations and activations only: an update of a
			// connection that is already active (even of its material) is
			// not refused; the material's test becomes stale, which matters
			// the next time the connection is activated.
			if cv := viewConnection(json.RawMessage(r.Spec)); cv.Type == "enterprise" && cv.Active {
				continue
			}
		}
		ok := false
		if r != nil {
			t, err := db.LoadConnectionTest(ctx, envID, r.ResourceID)
			if err != nil {
				return nil, err
			}
			ok = t.Status == "succeeded" && t.MaterialHash == materialHash(v.OIDC)
		}
		if !ok {
			out = append(out, FieldError{Pointer: fmt.Sprintf("/changes/%d/spec", i), Code: CodeTestRequired,
				Detail: fmt.Sprintf("connection %s has no successful test of this material: apply it inactive, test it, then activate it", quoteShort(c.Key))})
		}
	}
	return out, nil
}

// uniqueHolders maps every unique value of the resources of kind k in the
// post-plan state, as UniqueValue.Key compares them, to the keys that hold
// it, in key order. The key is computed from each spec, not read from
// display_name_key, so that a row whose stored key is missing compares all
// the same.
func (p *postState) uniqueHolders(k Kind) map[uniqueKey][]string {
	out := map[uniqueKey][]string{}
	p.each(k, func(key string, spec json.RawMessage) {
		for _, u := range UniqueValues(k, spec) {
			out[u.compared()] = append(out[u.compared()], key)
		}
	})
	return out
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
