package plans

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// MaxPlanBytes bounds a plan's stored size and a revision's (10 MiB).
const MaxPlanBytes = 10 << 20

// PlanRequest is a parsed body of POST /v1/config-plans.
type PlanRequest struct {
	Doc      *config.Document
	Prune    bool
	Problems []config.FieldError // 422-class problems found while decoding
	// DocumentBytes is the size of the config member as sent.
	DocumentBytes int
	// Versions are the versions the request expects resources at (§13):
	// one that moved refuses the plan.
	Versions []config.ExpectedVersion
}

// RequiredPermissions are the permissions plan creation needs: config:write
// and the read permission of every planned type, and of every type whose
// versions the request lists (their check tells those versions).
func (pr *PlanRequest) RequiredPermissions() []string {
	return readPerms(append(slices.Clone(pr.Doc.Types), versionKinds(pr.Versions)...), config.PermConfigWrite)
}

// PendingPlan is a plan creation, or a restore, whose permissions hold:
// what the service needs to admit it (the rate limits of §10) before it
// runs.
type PendingPlan struct {
	s  *Service
	a  Actor
	pr *PlanRequest
	// formerIDs are, for a restore, the ids of the deleted connections it
	// brings back, by key.
	formerIDs map[string]string
	// preview marks a preview (PreparePreview), which stores nothing.
	preview bool
}

// PreparePlan checks the permissions plan creation needs.
func (s *Service) PreparePlan(a Actor, pr *PlanRequest) (*PendingPlan, error) {
	if err := a.Require(pr.RequiredPermissions()...); err != nil {
		s.hooks.observePlanCreated(&err)
		return nil, err
	}
	return &PendingPlan{s: s, a: a, pr: pr}, nil
}

// PreparePreview checks the permissions of a preview of plan creation
// (§14): those of plan creation. A preview is not a plan creation: it is
// not counted as one.
func (s *Service) PreparePreview(a Actor, pr *PlanRequest) (*PendingPlan, error) {
	if err := a.Require(pr.RequiredPermissions()...); err != nil {
		return nil, err
	}
	return &PendingPlan{s: s, a: a, pr: pr, preview: true}, nil
}

// CreatePlan computes and stores a plan for the actor's environment,
// without admission limits: PreparePlan, then Create.
func (s *Service) CreatePlan(ctx context.Context, a Actor, pr *PlanRequest) (*Plan, error) {
	pp, err := s.PreparePlan(a, pr)
	if err != nil {
		return nil, err
	}
	return pp.Create(ctx)
}

// Refused ends a plan creation that its admission refused with err
// (returned).
func (pp *PendingPlan) Refused(err error) error {
	if !pp.preview {
		pp.s.hooks.observePlanCreated(&err)
	}
	return err
}

// Preview computes the plan that Create would store, with every check of
// plan creation, and stores nothing: no plan, no event (§14).
func (pp *PendingPlan) Preview(ctx context.Context) (*PlanPreview, error) {
	s, pr := pp.s, pp.pr
	var plan *Plan
	// It writes nothing: its reads need no transaction, as Create's do not.
	err := s.db.Reads(ctx, s.db.Now(), func(tx *configdb.Tx) error {
		p, err := s.computePlan(ctx, tx, pp.a, pr)
		if err != nil {
			return err
		}
		if err := documentSize(pr); err != nil {
			return err
		}
		if err := planSize(newPlanRow(p)); err != nil {
			return err
		}
		plan = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	plan.Status = StatusPreview
	return &PlanPreview{Plan: plan}, nil
}

// documentSize is the last answer of plan creation: the document is over
// 10 MiB (the plan's own size is planSize).
func documentSize(pr *PlanRequest) error {
	if pr.DocumentBytes > MaxPlanBytes {
		return &config.Error{Code: config.CodeConfigDocumentTooLarge,
			Detail: fmt.Sprintf("the document takes %d bytes, over the limit of %d; plan fewer types", pr.DocumentBytes, MaxPlanBytes)}
	}
	return nil
}

// Create computes and stores the plan of an admitted creation.
func (pp *PendingPlan) Create(ctx context.Context) (_ *Plan, err error) {
	s := pp.s
	defer s.hooks.observePlanCreated(&err)
	// On PostgreSQL the plan's reads are one statement (two when it deletes
	// applications: the second reads their recent tokens, for a warning),
	// and its record is one more: it needs no transaction (SQLite runs each
	// in one, configdb.DB.Reads and CreatePlan). A plan stored
	// from a snapshot that an apply has since changed is one the apply
	// already refuses, by its base versions, as config_conflict.
	now := s.db.Now()
	var plan *Plan
	err = s.db.Reads(ctx, now, func(tx *configdb.Tx) error {
		p, err := pp.compute(ctx, tx)
		plan = p
		return err
	})
	if err != nil {
		return nil, err
	}
	row, ev, err := planRecord(pp.a, plan)
	if err != nil {
		return nil, err
	}
	stored := int64(len(row.Changes))
	if err := s.db.CreatePlan(ctx, now, row, *ev); err != nil {
		return nil, err
	}
	s.changes.put(plan.key(), cacheableChanges(plan.Changes), stored)
	plan.storedStatus = row.Status
	return plan, nil
}

// compute is the plan that Create stores, with every answer of plan
// creation but its size's, read in tx.
func (pp *PendingPlan) compute(ctx context.Context, tx *configdb.Tx) (*Plan, error) {
	p, err := pp.s.computePlan(ctx, tx, pp.a, pp.pr)
	if err != nil {
		return nil, err
	}
	// The last answer of plan creation: the document or its plan is over
	// 10 MiB (the plan's size is checked as it is stored).
	if err := documentSize(pp.pr); err != nil {
		return nil, err
	}
	// A deleted connection comes back with its former id, so the callback
	// URL registered at its identity provider still works.
	for i, c := range p.Changes {
		if c.Kind == config.KindConnection && c.Action == ActionCreate && pp.formerIDs[c.Key] != "" {
			p.Changes[i].ResourceID = json.RawMessage(config.MustJSON(pp.formerIDs[c.Key]))
		}
	}
	return p, nil
}

// computePlan reads the environment (in tx; its resources, generations,
// material and policies in one statement, a consistent snapshot) and
// computes the plan of a request in phases: load what the plan needs, lay
// the document over it, check the result (validation_failed, the expected
// versions, policy_conflict), then build the changes in write order.
func (s *Service) computePlan(ctx context.Context, tx *configdb.Tx, a Actor, pr *PlanRequest) (*Plan, error) {
	p, _, err := s.computePlanFrom(ctx, tx, a, pr)
	return p, err
}

// computePlanFrom is computePlan that also returns the state it planned
// against: the resources the document names (every one of its entries),
// those they reference and, with prune, the planned kinds, read in tx.
func (s *Service) computePlanFrom(ctx context.Context, tx *configdb.Tx, a Actor, pr *PlanRequest) (*Plan, state, error) {
	ps, err := loadPlanState(ctx, tx, a.EnvironmentID, pr.Doc, pr.Prune, pr.Versions)
	if err != nil {
		return nil, nil, err
	}
	ps.expected = pr.Versions
	ps.entries, ps.inDoc = planEntries(pr.Doc, ps.planned, pr.Prune, ps.cur)
	problems := append(slices.Clone(pr.Problems), ps.keepMaterial()...)
	ps.post = &postState{cur: ps.cur, specs: map[string]json.RawMessage{}, readable: a.canRead}
	for _, e := range ps.entries {
		ps.post.specs[resourceRef(e.kind, e.key)] = e.spec
	}
	// A conflict with §11's policies is answered with the block rules'
	// (§18), which need the plan's changes: the plan is built first.
	policyErr := runPlanChecks(ps, problems)
	if policyErr != nil && !isPolicyConflict(policyErr) {
		return nil, nil, policyErr
	}
	sortEntries(ps.entries)
	recent, err := tx.RecentTokens(ctx, a.EnvironmentID, ps.deletedApplications(), tx.Now.Add(-tokenWindow))
	if err != nil {
		return nil, nil, err
	}
	p := s.buildPlan(tx.Now, a, ps, recent)
	if err := applyPlanRules(a.EnvironmentID, ps, p, policyErr); err != nil {
		return nil, nil, err
	}
	return p, ps.cur, nil
}

// loadPlanState reads what planning doc needs: the resources it names and
// those they reference, whole kinds for prune and for deletions, the
// generations of the planned and referencing types, the confirmed OIDC
// material and the policies, and the resources whose versions the request
// lists.
func loadPlanState(ctx context.Context, tx *configdb.Tx, envID string, doc *config.Document, prune bool, expected []config.ExpectedVersion) (*planState, error) {
	ps := &planState{prune: prune, planned: slices.Clone(doc.Types)}
	sortKinds(ps.planned)
	if prune {
		ps.refTypes = referencingTypes(ps.planned)
	}
	n := newNeed()
	for _, k := range ps.planned {
		if info, _ := config.LookupKind(k); prune && !info.Singleton {
			n.kind(k)
		}
		for _, e := range doc.Entries[k] {
			n.resource(k, e.Key, e.Spec)
		}
	}
	for _, ev := range expected {
		n.key(ev.Kind, ev.Key)
	}
	if prune {
		// Whatever prune deletes can be referenced from anywhere.
		for _, k := range ps.planned {
			for _, rk := range referencedBy[k] {
				n.kind(rk)
			}
		}
	}
	// The resources, the generations, the material and the policies: one
	// statement.
	head, rows, err := tx.PlanHead(ctx, envID, kindStrings(append(slices.Clone(ps.planned), ps.refTypes...)), n.selection())
	if err != nil {
		return nil, err
	}
	ps.cur, ps.gens, ps.material = stateOf(rows, true), kindGenerations(head.Generations), head.Material
	if ps.policies, err = policiesOf(head.Policies); err != nil {
		return nil, err
	}
	ps.envName = head.EnvironmentName
	return ps, nil
}

// planEntries lists what the plan sets: every entry of the document, in
// kind order, and with prune the current resources of the planned kinds
// that the document leaves out (deletions, in key order). inDoc holds the
// document's resources.
func planEntries(doc *config.Document, planned []config.Kind, prune bool, cur state) (entries []entry, inDoc map[string]bool) {
	inDoc = map[string]bool{}
	for _, k := range planned {
		info, _ := config.LookupKind(k)
		for _, e := range doc.Entries[k] {
			ptr := config.Pointer("config", info.DocKey, e.Key)
			if info.Singleton {
				ptr = config.Pointer("config", info.DocKey)
			}
			entries = append(entries, entry{k, e.Key, e.Spec, ptr})
			inDoc[resourceRef(k, e.Key)] = true
		}
		if prune && !info.Singleton {
			keys := make([]string, 0, len(cur[k]))
			for key := range cur[k] {
				if !inDoc[resourceRef(k, key)] {
					keys = append(keys, key)
				}
			}
			slices.Sort(keys)
			for _, key := range keys {
				entries = append(entries, entry{k, key, nil, ""})
			}
		}
	}
	return entries, inDoc
}

// sortEntries puts the entries in write order: deletions first in reverse
// kind order, then the others in kind order.
func sortEntries(entries []entry) {
	sort.SliceStable(entries, func(i, j int) bool {
		di, dj := entries[i].spec == nil, entries[j].spec == nil
		if di != dj {
			return di
		}
		oi, oj := config.WriteOrder(entries[i].kind), config.WriteOrder(entries[j].kind)
		if oi != oj {
			if di {
				return oi > oj
			}
			return oi < oj
		}
		return entries[i].key < entries[j].key
	})
}

// buildPlan makes the plan of the checked entries, in write order.
func (s *Service) buildPlan(now time.Time, a Actor, ps *planState, recent map[string]bool) *Plan {
	p := &Plan{ID: config.NewID(config.PrefixPlan), Object: "config_plan", EnvironmentID: a.EnvironmentID, Status: StatusPlanned,
		Prune: ps.prune, Types: sortedKindNames(ps.planned), ReferencingTypes: sortedKindNames(ps.refTypes),
		Warnings: []Warning{}, RequiredSecrets: []string{}, CreatedAt: Time(now), ExpiresAt: Time(now.Add(s.cfg.PlanTTL)),
		CreatedBy: a.APIKeyID, CreatedByOwner: a.Owner, versions: map[string]int{}, fingerprints: map[config.Kind]int64{}, Changes: []Change{}}
	for _, k := range append(slices.Clone(ps.planned), ps.refTypes...) {
		p.fingerprints[k] = ps.gens[k]
	}
	// The holders of the unique values of a kind, indexed once (by
	// post.uniqueHolders) rather than scanned for every entry.
	holders := map[config.Kind]map[config.UniqueKey][]string{}
	for i, e := range ps.entries {
		c, version := ps.change(e)
		p.versions[resourceRef(e.kind, e.key)] = version
		ptr := fmt.Sprintf("/changes/%d", i)
		if w, ok := deletionWarning(c, ptr, recent); ok {
			p.Warnings = append(p.Warnings, w)
		}
		if c.Action == ActionCreate || c.Action == ActionUpdate {
			us := config.UniqueValues(e.kind, e.spec)
			if holders[e.kind] == nil && len(us) > 0 {
				holders[e.kind] = ps.post.uniqueHolders(e.kind)
			}
			p.Warnings = append(p.Warnings, uniqueWarnings(c, ptr, us, holders[e.kind], ps.inDoc)...)
		}
		if c.RequiresSecret {
			p.RequiredSecrets = append(p.RequiredSecrets, c.SecretRef)
		}
		p.RequiresSPHost = p.RequiresSPHost || c.WritesMaterial
		p.Summary.count(c.Action)
		p.Changes = append(p.Changes, c)
	}
	p.Warnings = append(p.Warnings, omittedWarnings(ps.expected, ps.inDoc, ps.prune, ps.planned)...)
	slices.Sort(p.RequiredSecrets)
	p.RequiredSecrets = slices.Compact(p.RequiredSecrets)
	p.Approvals, p.ApprovalsRequired = []Approval{}, approvalsRequired(p, ps.policies)
	return p
}

// change is the planned change of an entry, with the version it was
// planned at (0: the resource does not exist).
func (ps *planState) change(e entry) (Change, int) {
	c := Change{Kind: e.kind, Key: e.key, Spec: e.spec}
	r := ps.cur.get(e.kind, e.key)
	var before json.RawMessage
	version := 0
	if r != nil {
		v := r.Version
		c.BaseVersion, before, version = &v, json.RawMessage(r.Spec), v
	}
	switch {
	case e.spec == nil && r == nil:
		c.Action = ActionNoOp
	case e.spec == nil:
		c.Action = ActionDelete
	case r == nil:
		c.Action = ActionCreate
	case bytes.Equal(before, e.spec):
		c.Action = ActionNoOp
	default:
		c.Action = ActionUpdate
	}
	switch c.Action {
	case ActionNoOp:
		c.Diff = []config.DiffOp{}
	case ActionCreate:
		// The document's specs are canonical: the added value is the
		// spec as it is, with no walk.
		c.Diff = []config.DiffOp{{Op: "add", Path: "", Value: e.spec}}
	default:
		c.Diff = config.Diff(before, e.spec)
		// An op's old value is a slice of today's spec, which it would keep
		// alive with the plan (the plan's size again, for a few changed
		// members): it is copied out.
		for i := range c.Diff {
			c.Diff[i].Old = bytes.Clone(c.Diff[i].Old)
		}
		// Bytes that differ but hold the same value (a spec stored with
		// <, > or & escaped, as the service once wrote them) are no
		// change.
		if c.Action == ActionUpdate && len(c.Diff) == 0 {
			c.Action = ActionNoOp
		}
	}
	if e.kind == config.KindConnection {
		c.ResourceID = json.RawMessage("null")
		if r != nil && r.ResourceID != "" {
			c.ResourceID = json.RawMessage(config.MustJSON(r.ResourceID))
		}
		if !ps.keep[e.key] {
			planSecret(&c, r, ps.material)
		} else {
			c.KeepsMaterial = true
		}
	}
	return c, version
}

// count adds a change of action to the summary.
func (s *Summary) count(action Action) {
	switch action {
	case ActionCreate:
		s.Create++
	case ActionUpdate:
		s.Update++
	case ActionDelete:
		s.Delete++
	default:
		s.NoOp++
	}
}

// planSecret decides whether a connection change needs its client secret:
// an enterprise connection whose OIDC material must be written (created,
// changed, or not confirmed by the federation service), or a social
// connection with its own credentials that is created or whose client_id
// changes. A no_op whose material is missing becomes an update.
func planSecret(c *Change, r *configdb.Resource, material map[string]string) {
	if c.Spec == nil {
		return
	}
	v := config.ViewConnection(c.Spec)
	var cv config.ConnectionView
	if r != nil {
		cv = config.ViewConnection(json.RawMessage(r.Spec))
	}
	switch v.Type {
	case "enterprise":
		if v.OIDC == nil {
			return
		}
		needs := r == nil || cv.Type != "enterprise" || !bytes.Equal(config.Canonical(cv.OIDC), config.Canonical(v.OIDC))
		if !needs && material[r.ResourceID] != config.MaterialHash(v.OIDC) {
			needs = true
			if c.Action == ActionNoOp {
				c.Action = ActionUpdate
			}
		}
		if needs {
			c.RequiresSecret, c.WritesMaterial, c.SecretRef = true, true, config.SecretRef(c.Key)
		}
	case "social":
		if v.Social == nil || !v.Social.UseOwnCredentials {
			return
		}
		if r == nil || cv.Social == nil || !cv.Social.UseOwnCredentials || cv.Social.ClientID != v.Social.ClientID {
			c.RequiresSecret, c.SecretRef = true, config.SecretRef(c.Key)
		}
	}
}

// newPlanRow is the stored form of a computed plan. The stored changes are
// kept on p too: its answer holds the same bytes (see keepChangesJSON).
func newPlanRow(p *Plan) *configdb.PlanRow {
	changes := appendChangeRecords(nil, p.Changes)
	p.keepChangesJSON(changes)
	row := &configdb.PlanRow{EnvironmentID: p.EnvironmentID, ID: p.ID, Status: string(p.Status), Prune: p.Prune,
		Types: config.MustJSON(p.Types), TypeSet: typeSet(p.Types), ReferencingTypes: config.MustJSON(p.ReferencingTypes), Changes: changes,
		Warnings: config.MustJSON(p.Warnings), RequiredSecrets: config.MustJSON(p.RequiredSecrets), RequiresSPHost: p.RequiresSPHost,
		Summary: config.MustJSON(p.Summary), Versions: config.MustJSON(p.versions), Fingerprints: config.MustJSON(p.fingerprints),
		CreatedAt: time0(p.CreatedAt), ExpiresAt: time0(p.ExpiresAt), CreatedBy: p.CreatedBy, CreatedByOwner: p.CreatedByOwner, RebasedFrom: p.RebasedFrom}
	if p.RebasedFrom != nil {
		row.Moved = config.MustJSON(p.Moved)
	}
	return row
}

// planSize refuses a plan whose stored form would be over 10 MiB.
func planSize(row *configdb.PlanRow) error {
	if size := len(row.Changes) + len(row.Warnings) + len(row.Versions) + len(row.Moved); size > MaxPlanBytes {
		return &config.Error{Code: config.CodeConfigDocumentTooLarge,
			Detail: fmt.Sprintf("the plan would take %d bytes, over the limit of %d; plan fewer types", size, MaxPlanBytes)}
	}
	return nil
}

func (s *Service) insertPlan(ctx context.Context, tx *configdb.Tx, a Actor, p *Plan) error {
	row, ev, err := planRecord(a, p)
	if err != nil {
		return err
	}
	if err := tx.InsertPlan(ctx, row, *ev); err != nil {
		return err
	}
	p.storedStatus = row.Status
	return nil
}

// planRecord is the stored form of a new plan and its plan_created event,
// or the answer that it is too large.
func planRecord(a Actor, p *Plan) (*configdb.PlanRow, *configdb.PlanEventRow, error) {
	row := newPlanRow(p)
	if err := planSize(row); err != nil {
		return nil, nil, err
	}
	data := map[string]any{"summary": p.Summary}
	if p.RebasedFrom != nil {
		data["rebased_from"] = *p.RebasedFrom
	}
	return row, eventRow(a, p.ID, "plan_created", data), nil
}

func time0(t Time) time.Time { return time.Time(t) }

func sortedKindNames(ks []config.Kind) []config.Kind {
	out := slices.Clone(ks)
	if out == nil {
		out = []config.Kind{}
	}
	slices.Sort(out)
	return out
}

func sortProblems(ps []config.FieldError) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Pointer < ps[j].Pointer })
}

// referencePointer locates a reference problem at the field that holds the
// wrong value: a missing API at the grant's or the permission's `api` (once
// per grant, not once per scope), a missing scope at the permission's
// `scope` or the grant's scope.
func referencePointer(ref config.Reference, code config.Code) string {
	if ref.Kind != config.KindAPI {
		return ref.Pointer
	}
	if strings.HasPrefix(ref.Pointer, "/permissions/") {
		if code == config.CodeUnknownScope {
			return ref.Pointer + "/scope"
		}
		return ref.Pointer + "/api"
	}
	if i := strings.Index(ref.Pointer, "/scopes/"); i >= 0 && code == config.CodeDanglingReference {
		return ref.Pointer[:i] + "/api"
	}
	return ref.Pointer
}

// withMember returns the object spec with member name set to value.
func withMember(spec json.RawMessage, name string, value json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(spec, &m); err != nil {
		return spec
	}
	m[name] = value
	return config.Canonical(config.MustJSON(m))
}
