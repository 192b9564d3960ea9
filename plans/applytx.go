package plans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/keenauth/configplans/canonjson"
	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/revisions"
)

// The apply's transaction runs in phases: load the state the plan needs
// (loadApplyState), check it against rows 13 to 17 (applyChecks), build
// the revision (row 18), then write the changes and, unless validating
// only, record the revision, the management log and the plan's state.

// applied is what the apply transaction wrote.
type applied struct {
	material   bool
	connIDs    map[string]string // connection key → id, for the material writes
	revisionID *string
	// logID is the config.applied entry's: it exists once the transaction
	// has committed.
	logID string
	// plan is the plan as the transaction left it, when it is applied (no
	// OIDC material to write): the answer, without reading it back.
	plan *Plan
}

// hold is how an apply's transaction holds its plan: by the claim whose
// lease token is token, or by claiming it itself (started is then the
// apply_started event, recorded with the outcome). With neither, the
// transaction only validates: it stops after the writes, which the caller
// rolls back.
type hold struct {
	token   string
	started *configdb.PlanEventRow
}

func (h hold) validateOnly() bool { return h.token == "" && h.started == nil }

// errNotClaimable ends an apply's transaction that was to claim its plan
// and found it no longer claimable: applied, expired or conflicted since it
// was loaded (notClaimed answers it).
var errNotClaimable = errors.New("the plan is no longer claimable")

// applyTx runs the phases of an apply in tx.
func (s *Service) applyTx(ctx context.Context, tx *configdb.Tx, a Actor, p *Plan, opt ApplyOptions, h hold) (*applied, error) {
	var claim *configdb.Claim
	if h.started != nil {
		claim = &configdb.Claim{Plan: p.key(), Fingerprint: opt.IdempotencyFingerprint}
	}
	// The approvals are counted unless validating only: read with the
	// locks, once the plan's row is locked.
	var review *configdb.PlanKey
	if !h.validateOnly() {
		k := p.key()
		review = &k
	}
	st, err := loadApplyState(ctx, tx, a.EnvironmentID, p, claim, review)
	if err != nil {
		return nil, err
	}
	st.post.readable = a.canRead
	if err := applyRules(st); err != nil {
		return nil, err
	}
	var approvals []Approval
	if !h.validateOnly() {
		// The approval rules in force now raise what the plan's
		// rule_approval warnings ask (§18): a rule removed since planning
		// does not lower it, as the early check (apply.go) already holds.
		need := approvalsNeeded(p, st.policies, max(st.ruleApprovals, ruleApprovals(p.Warnings)))
		if approvals, err = checkApprovals(st.approvals, need); err != nil {
			return nil, err
		}
	}
	if err := runApplyChecks(st); err != nil {
		return nil, err
	}
	rev, err := buildRevision(ctx, tx, p, st.cur)
	if err != nil {
		return nil, err
	}
	// Today's specs are in the encoded revision now; what follows needs
	// their versions only. Dropped, they are not held (the plan's size)
	// while the revision is sent.
	st.cur.dropSpecs()
	out := &applied{connIDs: map[string]string{}, material: slices.ContainsFunc(p.Changes, func(c Change) bool { return c.WritesMaterial })}
	// Row 19: OIDC material needs the federation service.
	if out.material && !federation.Configured(s.fed) {
		return nil, &config.Error{Code: config.CodeServiceUnavailable, Detail: "no federation service is configured for OIDC material; nothing was written",
			Extra: map[string]any{"retry_after": 60}}
	}
	writes, kinds := resourceWrites(a, p, st.cur, out)
	if h.validateOnly() {
		return out, tx.WriteResources(ctx, a.EnvironmentID, writes)
	}
	// The writes go with the record (RecordApplyOutcome).
	rec := configdb.ApplyRecord{EnvironmentID: a.EnvironmentID, Kinds: kinds, Keep: s.cfg.RevisionLimit, Plan: p.key(), Token: h.token,
		Writes: writes}
	if rev.n > 0 {
		id := config.NewID(config.PrefixRevision)
		out.revisionID = &id
		rec.Revision = &revisions.Revision{EnvironmentID: a.EnvironmentID, ID: id, PlanID: p.ID, Types: kindStrings(p.Types), Counts: rev.counts,
			CreatedAt: tx.Now, ExpiresAt: tx.Now.Add(s.cfg.RevisionMaxAge)}
		rec.Resources, rec.ResourcesSent = rev.encoded, rev.sent
	}
	rec.Logs = applyLogs(tx, a, p, st.cur, rev.counts, out.revisionID, approvals)
	out.logID = rec.Logs[0].ID
	if h.started != nil {
		rec.Events = append(rec.Events, *h.started)
	}
	var done *configdb.PlanEventRow
	rec.Applied, done = s.appliedRecord(tx, a, p, opt, rev.counts, out)
	if done != nil {
		rec.Events = append(rec.Events, *done)
	}
	recorded, pruned, err := tx.RecordApplyOutcome(ctx, rec)
	if err != nil {
		return nil, err
	}
	if !recorded && h.token == "" {
		// The plan was locked as claimable: only a bug reaches this.
		return nil, errNotClaimable
	}
	if !recorded {
		return nil, &config.Error{Code: config.CodeConfigPlanNotApplicable, Detail: "the plan's apply lease was lost; nothing was written",
			Extra: map[string]any{"plan_status": StatusApplying}}
	}
	if pruned > 0 && s.hooks.OnRevisionsPruned != nil {
		s.hooks.OnRevisionsPruned(pruned)
	}
	return out, nil
}

// loadApplyState re-reads, in the apply's transaction, what the plan's
// checks need. It locks the environment, reading the resources the plan
// needs, the generations and the policies with the lock (LockForApply):
// the applies of one environment never interleave (see LockEnvironment).
// With claim, it also locks the plan, or answers errNotClaimable; with
// review, it reads that plan's approvals.
func loadApplyState(ctx context.Context, tx *configdb.Tx, envID string, p *Plan, claim *configdb.Claim, review *configdb.PlanKey) (*applyState, error) {
	n := newNeed()
	post := &postState{specs: map[string]json.RawMessage{}}
	// The unique values of each planned spec are read once, for the need
	// and for row 14 (checkUniqueValues).
	uniques := make([][]config.UniqueValue, len(p.Changes))
	for i, c := range p.Changes {
		if c.Action == ActionNoOp {
			// A no-op names its resource only for the version check.
			n.key(c.Kind, c.Key)
			continue
		}
		if c.Spec != nil && (c.Action == ActionCreate || c.Action == ActionUpdate) {
			uniques[i] = config.UniqueValues(c.Kind, c.Spec)
			n.resourceWith(c.Kind, c.Key, c.Spec, uniques[i])
		} else {
			n.resource(c.Kind, c.Key, c.Spec)
		}
		post.specs[resourceRef(c.Kind, c.Key)] = c.Spec
	}
	head, rows, err := tx.LockForApply(ctx, envID, kindStrings(append(slices.Clone(p.Types), p.ReferencingTypes...)), n.selection(), claim, review)
	if err != nil {
		return nil, err
	}
	if claim != nil && !head.Claimable {
		return nil, errNotClaimable
	}
	cur := stateOf(rows, false)
	post.cur = cur
	st := &applyState{plan: p, cur: cur, post: post, tests: map[string]configdb.ConnectionTest{}, approvals: approvalsOf(head.Approvals),
		uniqueValues: uniques}
	st.gens = kindGenerations(head.Generations)
	for _, c := range p.Changes {
		if r, activated := activatedConnection(c, cur); activated && r != nil {
			if st.tests[r.ResourceID], err = tx.LoadConnectionTest(ctx, envID, r.ResourceID); err != nil {
				return nil, err
			}
		}
	}
	if st.policies, err = policiesOf(head.Policies); err != nil {
		return nil, err
	}
	st.envName = head.EnvironmentName
	return st, nil
}

// kindGenerations are generations read by kind name.
func kindGenerations(gens map[string]int64) map[config.Kind]int64 {
	out := make(map[config.Kind]int64, len(gens))
	for k, g := range gens {
		out[config.Kind(k)] = g
	}
	return out
}

// policiesOf decodes stored policies (nil: none, the zero value).
func policiesOf(raw configdb.JSON) (config.Policies, error) {
	var p config.Policies
	if raw == nil {
		return p, nil
	}
	err := json.Unmarshal(raw, &p)
	return p, err
}

// revision is what row 18 builds: the resources of the changes as they
// were, encoded (none when n is 0), and the counts of the changes. The
// resources are not kept once encoded: their specs are slices of today's,
// which the apply drops then (dropSpecs).
type revision struct {
	n       int
	encoded []byte
	// sent: the encoding went to the transaction in pieces
	// (tx.SendRevision), and encoded is nil.
	sent   bool
	counts revisions.Counts
}

// revisionPiece is the size of the pieces in which a revision over
// revisionWhole is encoded and sent on PostgreSQL (tx.SendRevision).
const revisionPiece = 1 << 20

// revisionWhole is the most specs a revision encoded whole may hold: the
// size up to which configdb sends a value as a statement's parameter
// (largeParameter), as the pieces, put together in a setting of the
// transaction, cost PostgreSQL more than the parameter.
const revisionWhole = 4 << 20

// buildRevision is row 18: the revision kept for the changes, which must
// fit in 10 MiB. On PostgreSQL one whose specs take over revisionWhole is
// encoded and sent to tx a piece at a time (issue 34, P5: held whole, its
// encoding was live beside today's specs and the plan's changes).
func buildRevision(ctx context.Context, tx *configdb.Tx, p *Plan, cur state) (*revision, error) {
	rev := &revision{}
	var resources []revisions.Resource
	for _, c := range p.Changes {
		r := cur.get(c.Kind, c.Key)
		rr := revisions.Resource{Kind: string(c.Kind), Key: c.Key, Action: string(c.Action)}
		if r != nil {
			v := r.Version
			rr.VersionBefore, rr.SpecBefore, rr.ResourceIDBefore = &v, json.RawMessage(r.Spec), r.ResourceID
		}
		switch c.Action {
		case ActionCreate:
			rev.counts.Created++
		case ActionUpdate:
			rev.counts.Updated++
		case ActionDelete:
			rev.counts.Deleted++
		default:
			rev.counts.Unchanged++
			continue
		}
		resources = append(resources, rr)
	}
	rev.n = len(resources)
	specs := 0
	for _, r := range resources {
		specs += len(r.SpecBefore)
	}
	var size int
	var err error
	if tx.RowLocks() && specs > revisionWhole {
		sent, over := 0, false
		size, err = revisions.EncodeInPieces(resources, revisionPiece, func(piece []byte) error {
			if over = over || sent+len(piece) > MaxPlanBytes; over {
				return nil // too large: nothing more is sent, the size says it
			}
			err := tx.SendRevision(ctx, sent, piece)
			sent += len(piece)
			return err
		})
		rev.sent = true
	} else {
		rev.encoded, err = revisions.Encode(resources)
		size = len(rev.encoded)
	}
	if err != nil {
		return nil, err
	}
	if size > MaxPlanBytes {
		return nil, &config.Error{Code: config.CodeConfigDocumentTooLarge,
			Detail: fmt.Sprintf("the revision of these changes would take %d bytes, over the limit of %d; plan fewer types", size, MaxPlanBytes)}
	}
	return rev, nil
}

// dropSpecs forgets the specs of the resources of st, keeping the rest.
func (st state) dropSpecs() {
	for _, byKey := range st {
		for _, r := range byKey {
			r.Spec = nil
		}
	}
}

// resourceWrites are the writes of every change, and the written kinds,
// whose generations (and the environment's) the apply's record moves.
func resourceWrites(a Actor, p *Plan, cur state, out *applied) (configdb.ResourceWrites, []string) {
	var creates []configdb.Resource
	var updates []configdb.ResourceUpdate
	var deletes []configdb.ResourceDeletion
	// The specs are those of the plan's stored changes, in the order of
	// p.Changes (decoded from them): the writes name their positions.
	from := &configdb.PlanSpecs{Plan: p.key(), Creates: []int{}, Updates: []int{}}
	written := map[config.Kind]bool{}
	for i, c := range p.Changes {
		r := cur.get(c.Kind, c.Key)
		switch c.Action {
		case ActionCreate:
			id := ""
			if c.Kind == config.KindConnection {
				// A restored connection keeps the id the plan names.
				if json.Unmarshal(c.ResourceID, &id) != nil || !config.ValidID(config.PrefixConnection, id) {
					id = config.NewID(config.PrefixConnection)
				}
				out.connIDs[c.Key] = id
			}
			creates = append(creates, configdb.Resource{EnvironmentID: a.EnvironmentID, Kind: string(c.Kind), Key: c.Key, ResourceID: id,
				Version: 1, Spec: configdb.JSON(c.Spec), DisplayNameKey: config.DisplayNameKey(c.Kind, c.Spec)})
			from.Creates = append(from.Creates, i)
		case ActionUpdate:
			updates = append(updates, configdb.ResourceUpdate{Kind: string(c.Kind), Key: c.Key, Version: r.Version, Spec: configdb.JSON(c.Spec),
				DisplayNameKey: config.DisplayNameKey(c.Kind, c.Spec)})
			from.Updates = append(from.Updates, i)
			if c.Kind == config.KindConnection {
				out.connIDs[c.Key] = r.ResourceID
			}
		case ActionDelete:
			deletes = append(deletes, configdb.ResourceDeletion{Kind: string(c.Kind), Key: c.Key, Version: r.Version})
		default:
			continue
		}
		written[c.Kind] = true
	}
	kinds := make([]string, 0, len(written))
	for k := range written {
		kinds = append(kinds, string(k))
	}
	slices.Sort(kinds)
	return configdb.ResourceWrites{Creates: creates, Updates: updates, Deletes: deletes, FromPlan: from}, kinds
}

// applyLogs are the management log's entries of an apply: config.applied
// with the counts, and one per changed resource.
func applyLogs(tx *configdb.Tx, a Actor, p *Plan, cur state, counts revisions.Counts, revisionID *string, approvals []Approval) []configdb.LogRow {
	logs := []configdb.LogRow{{EnvironmentID: a.EnvironmentID, ID: config.NewID(config.PrefixLog), Type: "config.applied", CreatedAt: tx.Now,
		APIKeyID: a.APIKeyID, RequestID: a.RequestID, PlanID: &p.ID, RevisionID: revisionID, Data: appliedLogData(counts, approvals)}}
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
		logs = append(logs, configdb.LogRow{EnvironmentID: a.EnvironmentID, ID: config.NewID(config.PrefixLog), Type: string(c.Kind) + "." + c.Action.LogVerb(), CreatedAt: tx.Now,
			APIKeyID: a.APIKeyID, RequestID: a.RequestID, PlanID: &p.ID, RevisionID: revisionID,
			Data: changeLogData(c.Kind, c.Key, v)})
	}
	return logs
}

// changeLogData is the data of a changed resource's log entry,
// {"key","kind","version"}, appended: encoding/json took a map through
// reflection and sorted its keys, once per change.
func changeLogData(kind config.Kind, key string, version int) []byte {
	b := make([]byte, 0, 40+len(key))
	b = canonjson.AppendString(append(b, `{"key":`...), key)
	b = canonjson.AppendString(append(b, `,"kind":`...), string(kind))
	b = strconv.AppendInt(append(b, `,"version":`...), int64(version), 10)
	return append(b, '}')
}

// appliedRecord is what the apply records on the plan: applied when it
// has no OIDC material to write (out.plan is then the answer, and the
// apply_succeeded event is recorded with it), still applying under the
// lease otherwise, until the federation service confirmed it.
func (s *Service) appliedRecord(tx *configdb.Tx, a Actor, p *Plan, opt ApplyOptions, counts revisions.Counts, out *applied) (configdb.AppliedPlan, *configdb.PlanEventRow) {
	rec := configdb.AppliedPlan{RevisionID: out.revisionID, AppliedBy: a.APIKeyID, Fingerprint: nullable(opt.IdempotencyFingerprint)}
	// A created connection's change shows its new id from now on (§5).
	changes := p.Changes
	if len(out.connIDs) > 0 {
		changes = slices.Clone(p.Changes)
		for i, c := range changes {
			if id, ok := out.connIDs[c.Key]; ok && c.Kind == config.KindConnection {
				changes[i].ResourceID = json.RawMessage(config.MustJSON(id))
			}
		}
		rec.Changes = appendChangeRecords(nil, changes)
	}
	if out.material {
		return rec, nil
	}
	rec.Finished = true
	res := *p
	appliedAt := Time(tx.Now)
	res.Status, res.AppliedAt, res.RevisionID, res.Changes = StatusApplied, &appliedAt, out.revisionID, changes
	out.plan = &res
	return rec, eventRow(a, p.ID, "apply_succeeded", map[string]any{"revision_id": out.revisionID, "counts": counts})
}
