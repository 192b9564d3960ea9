package plans

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// Moved is one entry of a rebase's moved list (§14): a resource of the
// source plan whose version changed since that plan was computed (Key set,
// with both versions and the diff from the spec the source was based on to
// the spec now), or a planned type whose content moved while no resource
// of the plan did (Key nil, Code type_changed).
type Moved struct {
	Kind config.Kind
	Key  *string
	// VersionThen and VersionNow are nil for a resource that did not exist
	// when the source was planned, or that is gone now.
	VersionThen *int
	VersionNow  *int
	Diff        []config.DiffOp
	Code        config.Code
}

type movedResource struct {
	Kind        config.Kind     `json:"kind"`
	Key         string          `json:"key"`
	VersionThen *int            `json:"version_then"`
	VersionNow  *int            `json:"version_now"`
	Diff        []config.DiffOp `json:"diff"`
}

type movedType struct {
	Kind config.Kind `json:"kind"`
	Key  *string     `json:"key"`
	Code config.Code `json:"code"`
}

// MarshalJSON writes a resource entry as {kind, key, version_then,
// version_now, diff} and a type entry as {kind, key: null, code}.
func (m Moved) MarshalJSON() ([]byte, error) {
	if m.Key == nil {
		return json.Marshal(movedType{Kind: m.Kind, Code: m.Code})
	}
	diff := m.Diff
	if diff == nil {
		diff = []config.DiffOp{}
	}
	return json.Marshal(movedResource{m.Kind, *m.Key, m.VersionThen, m.VersionNow, diff})
}

// UnmarshalJSON reads either form.
func (m *Moved) UnmarshalJSON(b []byte) error {
	var v struct {
		Kind        config.Kind     `json:"kind"`
		Key         *string         `json:"key"`
		VersionThen *int            `json:"version_then"`
		VersionNow  *int            `json:"version_now"`
		Diff        []config.DiffOp `json:"diff"`
		Code        config.Code     `json:"code"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*m = Moved(v)
	return nil
}

// MovedList is the moved member of a plan: [] for a plan that is not a
// rebase, or a rebase that found nothing moved.
type MovedList []Moved

// MarshalJSON writes a nil list as [].
func (l MovedList) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]Moved(l))
}

// PendingRebase is a rebase whose source plan is loaded and whose
// permissions hold: what the service needs to admit it (the rate limits of
// plan creation) before it runs.
type PendingRebase struct {
	s      *Service
	a      Actor
	source *Plan
}

// PrepareRebase loads the source plan of a rebase (404 when the
// environment has none of that id) and checks the permissions of plan
// creation over its types: config:write and the read permission of each.
func (s *Service) PrepareRebase(ctx context.Context, a Actor, planID string) (_ *PendingRebase, err error) {
	src, err := s.loadPlan(ctx, a.EnvironmentID, planID)
	if err == nil {
		err = a.Require(readPerms(src.Types, config.PermConfigWrite)...)
	}
	if err != nil {
		s.hooks.observePlanCreated(&err)
		return nil, err
	}
	return &PendingRebase{s: s, a: a, source: src}, nil
}

// Refused ends a rebase that its admission refused with err (returned).
func (pr *PendingRebase) Refused(err error) error {
	pr.s.hooks.observePlanCreated(&err)
	return err
}

// Create computes and stores the rebased plan, in one transaction that
// reads the source plan again: a source that is applied or being applied
// is refused (409 config_plan_not_applicable); otherwise the desired state
// of the source is planned against the configuration as it is now, the
// problems of plan creation pointing into the source's changes, and the
// source gets a plan_rebased event. The source keeps its status.
func (pr *PendingRebase) Create(ctx context.Context) (_ *Plan, err error) {
	s, a := pr.s, pr.a
	defer s.hooks.observePlanCreated(&err)
	var plan *Plan
	err = s.db.InTx(ctx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
		row, err := tx.LoadPlan(ctx, pr.source.key())
		if err != nil {
			if isNotFound(err) {
				return &config.Error{Code: config.CodeNotFound, Detail: "no such config plan"}
			}
			return err
		}
		src, err := s.planFromRow(row)
		if err != nil {
			return err
		}
		switch src.Status {
		case StatusApplied, StatusApplying, StatusRejected:
			return &config.Error{Code: config.CodeConfigPlanNotApplicable, Detail: "the plan is " + string(src.Status) + " and cannot be rebased",
				Extra: map[string]any{"plan_status": src.Status}}
		}
		p, now, err := s.computePlanFrom(ctx, tx, a, &PlanRequest{Doc: src.desiredState(), Prune: src.Prune})
		if err != nil {
			return src.sourcePointers(err)
		}
		p.RebasedFrom = &src.ID
		p.Moved = src.moved(p, now)
		p.Warnings = append(p.Warnings, revertWarnings(p, now)...)
		if err := s.insertPlan(ctx, tx, a, p); err != nil {
			return err
		}
		if err := recordEvent(ctx, tx, a, src.ID, "plan_rebased", map[string]any{"plan_id": p.ID}); err != nil {
			return err
		}
		plan = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	return plan, nil
}

// desiredState is the document a plan stands for: its types, the spec of
// every change and a null for every deletion, as a rebase plans it again.
// A connection whose document said oidc: null asks again for the material
// it has then.
func (p *Plan) desiredState() *config.Document {
	doc := &config.Document{Types: append([]config.Kind(nil), p.Types...), Entries: map[config.Kind][]config.Entry{}}
	for _, c := range p.Changes {
		spec := c.Spec
		if c.KeepsMaterial && spec != nil {
			spec = withMember(spec, "oidc", json.RawMessage("null"))
		}
		doc.Entries[c.Kind] = append(doc.Entries[c.Kind], config.Entry{Kind: c.Kind, Key: c.Key, Spec: spec})
	}
	return doc
}

// sourcePointers moves the pointers of plan creation's problems, which
// point into a document (/config/<key>/…), to the changes of the source
// plan the rebase planned again: /changes/<i>/spec/… for a spec,
// /changes/<i> for a deletion. A deletion that only the prune makes (a
// resource created since the source was planned) points to /prune.
func (p *Plan) sourcePointers(err error) error {
	var de *config.Error
	if !errors.As(err, &de) || len(de.Errors) == 0 {
		return err
	}
	type target struct {
		change   string
		deletion bool
	}
	byDoc := map[string]target{}
	pruned := map[string]bool{}
	for i, c := range p.Changes {
		info, _ := config.LookupKind(c.Kind)
		ptr := config.Pointer("config", info.DocKey, c.Key)
		if info.Singleton {
			ptr = config.Pointer("config", info.DocKey)
		}
		byDoc[ptr] = target{fmt.Sprintf("/changes/%d", i), c.Spec == nil}
	}
	for _, k := range p.Types {
		if info, _ := config.LookupKind(k); !info.Singleton {
			pruned[config.Pointer("config", info.DocKey)] = true
		}
	}
	moved := make([]config.FieldError, len(de.Errors))
	for i, fe := range de.Errors {
		moved[i] = fe
		if pruned[fe.Pointer] && p.Prune {
			moved[i].Pointer = "/prune"
			continue
		}
		for doc, t := range byDoc {
			rest, ok := strings.CutPrefix(fe.Pointer, doc)
			if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
				continue
			}
			if rest == "" && (t.deletion || de.Code == config.CodePolicyConflict) {
				// A deletion, or a block rule's problem: the whole change.
				moved[i].Pointer = t.change
			} else {
				moved[i].Pointer = t.change + "/spec" + rest
			}
			break
		}
	}
	sortProblems(moved)
	out := *de
	out.Errors = moved
	return &out
}

// moved lists what moved since p was computed, as the rebase's
// transaction reads it (p2 is the rebased plan, computed in it; now the
// state p2 was planned against, which holds every resource of p's changes
// that exists, since p2's document names each of them): every resource of
// p whose version changed, in the order of p's changes, then every planned
// type whose generation changed while none of p's resources of that type
// moved, in the order of p's types.
func (p *Plan) moved(p2 *Plan, now state) MovedList {
	out := MovedList{}
	movedKinds := map[config.Kind]bool{}
	for _, c := range p.Changes {
		then, ok := p.versions[resourceRef(c.Kind, c.Key)]
		if !ok && c.BaseVersion != nil {
			then = *c.BaseVersion
		}
		r := now.get(c.Kind, c.Key)
		var versionNow int
		var specNow json.RawMessage
		if r != nil {
			versionNow, specNow = r.Version, json.RawMessage(r.Spec)
		}
		if then == versionNow {
			continue
		}
		key := c.Key
		out = append(out, Moved{Kind: c.Kind, Key: &key, VersionThen: positive(then), VersionNow: positive(versionNow),
			Diff: movedDiff(c, specNow)})
		movedKinds[c.Kind] = true
	}
	for _, k := range p.Types {
		then, ok := p.fingerprints[k]
		if ok && !movedKinds[k] && then != p2.fingerprints[k] {
			out = append(out, Moved{Kind: k, Code: config.CodeTypeChanged})
		}
	}
	return out
}

// movedDiff is the diff from the spec change c was planned from to specNow
// (nil: gone). A change stored before diffs carried old cannot give its
// base back; its diff is then one operation at "" without old (as such a
// plan's own operations have none).
func movedDiff(c Change, specNow json.RawMessage) []config.DiffOp {
	var base json.RawMessage
	if c.BaseVersion != nil {
		b, ok := c.Spec, true
		if c.Action != ActionNoOp {
			b, ok = config.Revert(c.Spec, c.Diff)
		}
		if !ok {
			if specNow == nil {
				return []config.DiffOp{{Op: "remove", Path: ""}}
			}
			return []config.DiffOp{{Op: "replace", Path: "", Value: specNow}}
		}
		base = b
	}
	return config.Diff(base, specNow)
}

// positive is v as a version: nil for 0 (no resource).
func positive(v int) *int {
	if v <= 0 {
		return nil
	}
	return &v
}
