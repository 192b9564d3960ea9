package plans

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/keenauth/configplans/configdb"
)

// MaxPlanBytes bounds a plan's stored size and a revision's (10 MiB).
const MaxPlanBytes = 10 << 20

// PlanRequest is a parsed body of POST /v1/config-plans.
type PlanRequest struct {
	Doc      *Document
	Prune    bool
	Problems []FieldError // 422-class problems found while decoding
	docBytes int          // size of the config member as sent
}

// ParsePlanRequest strictly decodes a plan-creation body. A 400-class
// problem (not JSON, wrong types, unknown fields) is returned as an *Error.
func ParsePlanRequest(body []byte) (*PlanRequest, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &Error{Code: CodeMalformedRequest, Detail: "the request body must be a JSON object"}
	}
	var top map[string]json.RawMessage
	if err := strictObject(body, &top); err != nil {
		return nil, err
	}
	// Every 400-class problem is reported: unknown members, a prune that is
	// not a boolean, and those of the document.
	var bad []FieldError
	for k := range top {
		if k != "config" && k != "prune" {
			bad = append(bad, FieldError{Pointer: Pointer(k), Code: CodeUnknownField, Detail: "unknown field " + quoteShort(k)})
		}
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].Pointer < bad[j].Pointer })
	pr := &PlanRequest{}
	if raw, ok := top["prune"]; ok {
		if err := json.Unmarshal(raw, &pr.Prune); err != nil {
			bad = append(bad, FieldError{Pointer: "/prune", Code: CodeMalformedRequest, Detail: "prune must be a boolean"})
		}
	}
	raw, ok := top["config"]
	if !ok || string(raw) == "null" {
		pr.Problems = []FieldError{{Pointer: "/config", Code: CodeRequired, Detail: "config is required"}}
		pr.Doc = &Document{Entries: map[Kind][]Entry{}}
	} else {
		doc, problems, err := DecodeDocument(raw, "/config")
		var de *Error
		switch {
		case errors.As(err, &de) && (de.Code == CodeMalformedRequest || de.Code == CodeUnknownField):
			bad = append(bad, de.Errors...)
		case err != nil:
			return nil, err
		}
		pr.Doc, pr.Problems, pr.docBytes = doc, problems, len(raw)
	}
	if len(bad) > 0 {
		code := CodeUnknownField
		for _, p := range bad {
			if p.Code != CodeUnknownField {
				code = CodeMalformedRequest
			}
		}
		return nil, Problems(code, bad)
	}
	return pr, nil
}

// strictObject decodes a JSON object, answering malformed_request otherwise.
// A member repeated in the object is malformed too (as in a document), not
// silently replaced by its last occurrence.
func strictObject(body []byte, dst *map[string]json.RawMessage) error {
	notObject := &Error{Code: CodeMalformedRequest, Detail: "the request body must be a JSON object"}
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return notObject
	}
	*dst = map[string]json.RawMessage{}
	var repeated []FieldError
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return notObject
		}
		key, _ := t.(string)
		var value json.RawMessage
		if err := d.Decode(&value); err != nil {
			return notObject
		}
		if _, dup := (*dst)[key]; dup {
			repeated = append(repeated, FieldError{Pointer: Pointer(key), Code: CodeMalformedRequest,
				Detail: "This member is repeated in its object."})
			continue
		}
		(*dst)[key] = value
	}
	if _, err := d.Token(); err != nil {
		return notObject
	}
	if len(repeated) > 0 {
		return Problems(CodeMalformedRequest, repeated)
	}
	if _, err := d.Token(); err != io.EOF {
		return &Error{Code: CodeMalformedRequest, Detail: "the request body has data after the JSON object"}
	}
	return nil
}

// RequiredPermissions are the permissions plan creation needs: config:write
// and the read permission of every planned type.
func (pr *PlanRequest) RequiredPermissions() []string {
	return readPerms(pr.Doc.Types, PermConfigWrite)
}

// CreatePlan computes and stores a plan for the actor's environment.
// admit runs the rate and capacity checks once the permissions are known.
func (s *Service) CreatePlan(ctx context.Context, a Actor, pr *PlanRequest, admit func(context.Context) (func(), error)) (_ *Plan, err error) {
	defer s.observePlanCreated(&err)
	if err := a.Require(pr.RequiredPermissions()...); err != nil {
		return nil, err
	}
	if admit != nil {
		release, err := admit(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	var plan *Plan
	err = s.db.InTx(ctx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
		p, err := s.computePlan(ctx, tx, a, pr.Doc, pr.Prune, pr.Problems)
		if err != nil {
			return err
		}
		// The last answer of plan creation: the document or its plan is
		// over 10 MiB (the plan's size is checked as it is stored).
		if pr.docBytes > MaxPlanBytes {
			return &Error{Code: CodeConfigDocumentTooLarge,
				Detail: fmt.Sprintf("the document takes %d bytes, over the limit of %d; plan fewer types", pr.docBytes, MaxPlanBytes)}
		}
		if err := s.insertPlan(ctx, tx, a, p); err != nil {
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

// computePlan reads the environment (in tx, a consistent snapshot) and
// computes the plan of doc.
func (s *Service) computePlan(ctx context.Context, tx *configdb.Tx, a Actor, doc *Document, prune bool, problems []FieldError) (*Plan, error) {
	problems = slices.Clone(problems)
	planned := slices.Clone(doc.Types)
	sortKinds(planned)
	var refTypes []Kind
	if prune {
		refTypes = referencingTypes(planned)
	}
	n := newNeed()
	for _, k := range planned {
		if info, _ := LookupKind(k); prune && !info.Singleton {
			n.kind(k)
		}
		for _, e := range doc.Entries[k] {
			n.resource(k, e.Key, e.Spec)
		}
	}
	if prune {
		// Whatever prune deletes can be referenced from anywhere.
		for _, k := range planned {
			for _, rk := range referencedBy[k] {
				n.kind(rk)
			}
		}
	}
	cur, err := n.load(ctx, tx.Reader, a.EnvironmentID, true)
	if err != nil {
		return nil, err
	}
	gens, err := loadGenerations(ctx, tx.Reader, a.EnvironmentID, append(slices.Clone(planned), refTypes...))
	if err != nil {
		return nil, err
	}
	material, err := tx.ConfirmedMaterial(ctx, a.EnvironmentID)
	if err != nil {
		return nil, err
	}

	type planned1 struct {
		kind    Kind
		key     string
		spec    json.RawMessage // nil: delete
		pointer string          // pointer of the entry in the request ("" for pruned)
	}
	var entries []planned1
	inDoc := map[string]bool{}
	for _, k := range planned {
		info, _ := LookupKind(k)
		for _, e := range doc.Entries[k] {
			ptr := Pointer("config", info.DocKey, e.Key)
			if info.Singleton {
				ptr = Pointer("config", info.DocKey)
			}
			entries = append(entries, planned1{k, e.Key, e.Spec, ptr})
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
				entries = append(entries, planned1{k, key, nil, ""})
			}
		}
	}

	// Enterprise connections with oidc: null keep their current material,
	// and the plan leaves it alone even when the federation service has not
	// confirmed it: no secret, no write.
	keepMaterial := map[string]bool{}
	for i, e := range entries {
		if e.kind != KindConnection || e.spec == nil {
			continue
		}
		v := viewConnection(e.spec)
		if v.Type != "enterprise" || v.OIDC != nil {
			continue
		}
		var curOIDC json.RawMessage
		if r := cur.get(KindConnection, e.key); r != nil {
			if cv := viewConnection(json.RawMessage(r.Spec)); cv.Type == "enterprise" {
				curOIDC = cv.OIDC
			}
		}
		if curOIDC == nil {
			problems = append(problems, FieldError{Pointer: e.pointer + "/oidc", Code: CodeRequired,
				Detail: "a new enterprise connection needs its OIDC material (an object, not null)"})
			continue
		}
		entries[i].spec = withMember(e.spec, "oidc", curOIDC)
		keepMaterial[e.key] = true
	}

	post := &postState{cur: cur, specs: map[string]json.RawMessage{}}
	for _, e := range entries {
		post.specs[resourceRef(e.kind, e.key)] = e.spec
	}

	// References of every resource of the document resolve after the plan.
	for _, e := range entries {
		if e.spec == nil {
			if e.kind == KindConnection || post.specs[resourceRef(e.kind, e.key)] != nil {
				continue
			}
			if cur.get(e.kind, e.key) == nil {
				continue
			}
			if refs := post.referrers(e.kind, e.key); len(refs) > 0 {
				ptr := e.pointer
				if ptr == "" {
					info, _ := LookupKind(e.kind)
					ptr = Pointer("config", info.DocKey)
				}
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeInUse,
					Detail: fmt.Sprintf("%s is still referenced by %s", resourceRef(e.kind, e.key), refs[0])})
			}
			continue
		}
		seen := map[string]bool{}
		for _, ref := range References(e.kind, e.key, e.spec) {
			if code, detail, ok := post.resolve(ref); !ok {
				ptr := e.pointer + referencePointer(ref, code)
				if !seen[ptr] {
					seen[ptr] = true
					problems = append(problems, FieldError{Pointer: ptr, Code: code, Detail: detail})
				}
			}
		}
	}
	if len(problems) > 0 {
		sortProblems(problems)
		return nil, Problems(CodeValidationFailed, problems)
	}

	policies, err := loadPolicies(ctx, tx.Reader, a.EnvironmentID)
	if err != nil {
		return nil, err
	}
	var violations []FieldError
	for _, e := range entries {
		if e.spec != nil {
			if r := cur.get(e.kind, e.key); r == nil || !bytes.Equal(r.Spec, e.spec) {
				violations = append(violations, CheckPolicies(policies, e.kind, e.spec, e.pointer)...)
			}
		}
	}
	if len(violations) > 0 {
		sortProblems(violations)
		return nil, Problems(CodePolicyConflict, violations)
	}

	// Changes in write order: deletions first in reverse kind order, then
	// the others in kind order.
	sort.SliceStable(entries, func(i, j int) bool {
		di, dj := entries[i].spec == nil, entries[j].spec == nil
		if di != dj {
			return di
		}
		oi, oj := WriteOrder(entries[i].kind), WriteOrder(entries[j].kind)
		if oi != oj {
			if di {
				return oi > oj
			}
			return oi < oj
		}
		return entries[i].key < entries[j].key
	})

	now := tx.Now
	p := &Plan{ID: NewID(PrefixPlan), Object: "config_plan", EnvironmentID: a.EnvironmentID, Status: StatusPlanned,
		Prune: prune, Types: sortedKindNames(planned), ReferencingTypes: sortedKindNames(refTypes),
		Warnings: []Warning{}, RequiredSecrets: []string{}, CreatedAt: Time(now), ExpiresAt: Time(now.Add(s.cfg.PlanTTL)),
		CreatedBy: a.APIKeyID, versions: map[string]int{}, fingerprints: map[Kind]int64{}}
	for _, k := range append(slices.Clone(planned), refTypes...) {
		p.fingerprints[k] = gens[k]
	}
	var appKeys []string
	for _, e := range entries {
		if e.kind == KindApplication && e.spec == nil && cur.get(e.kind, e.key) != nil {
			appKeys = append(appKeys, e.key)
		}
	}
	recent, err := tx.RecentTokens(ctx, a.EnvironmentID, appKeys, now.Add(-tokenWindow))
	if err != nil {
		return nil, err
	}

	// The holders of the unique values of a kind, indexed once (by
	// post.uniqueHolders) rather than scanned for every entry.
	holders := map[Kind]map[uniqueKey][]string{}
	for i, e := range entries {
		c := Change{Kind: e.kind, Key: e.key, Spec: e.spec}
		r := cur.get(e.kind, e.key)
		var before json.RawMessage
		if r != nil {
			v := r.Version
			c.BaseVersion = &v
			before = json.RawMessage(r.Spec)
			p.versions[resourceRef(e.kind, e.key)] = r.Version
		} else {
			p.versions[resourceRef(e.kind, e.key)] = 0
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
		if c.Action == ActionNoOp && e.spec == nil {
			c.Spec = nil
		}
		switch c.Action {
		case ActionNoOp:
			c.Diff = []DiffOp{}
		case ActionCreate:
			// The document's specs are canonical: the added value is the
			// spec as it is, with no walk.
			c.Diff = []DiffOp{{Op: "add", Path: "", Value: e.spec}}
		default:
			c.Diff = Diff(before, e.spec)
		}
		if e.kind == KindConnection {
			c.ResourceID = json.RawMessage("null")
			if r != nil && r.ResourceID != "" {
				c.ResourceID = json.RawMessage(mustJSON(r.ResourceID))
			}
			if !keepMaterial[e.key] {
				s.planSecret(&c, r, material)
			}
		}
		ptr := fmt.Sprintf("/changes/%d", i)
		target := resourceRef(e.kind, e.key)
		if c.Action == ActionDelete && (e.kind == KindConnection || (e.kind == KindApplication && recent[e.key])) {
			why := "deleting a connection must be confirmed"
			if e.kind == KindApplication {
				why = "the application received a token in the last 30 days; deleting it must be confirmed"
			}
			p.Warnings = append(p.Warnings, Warning{Code: CodeDeletionRequiresConfirmation, Target: target, Pointer: ptr,
				Detail: why + " with confirm_deletions: [\"" + target + "\"]"})
		}
		if c.Action == ActionCreate || c.Action == ActionUpdate {
			for _, u := range UniqueValues(e.kind, e.spec) {
				if holders[e.kind] == nil {
					holders[e.kind] = post.uniqueHolders(e.kind)
				}
				if holder := uniqueHolder(holders[e.kind], e.kind, e.key, u, inDoc); holder != "" {
					p.Warnings = append(p.Warnings, Warning{Code: CodeUniqueValueInUse, Target: target, Pointer: ptr + "/spec/" + u.Field,
						Detail: fmt.Sprintf("%s %s is already used by %s; the apply will be refused while it is", u.Field, quoteShort(u.Value), holder)})
				}
			}
		}
		if c.RequiresSecret {
			p.RequiredSecrets = append(p.RequiredSecrets, c.SecretRef)
		}
		if c.WritesMaterial {
			p.RequiresSPHost = true
		}
		switch c.Action {
		case ActionCreate:
			p.Summary.Create++
		case ActionUpdate:
			p.Summary.Update++
		case ActionDelete:
			p.Summary.Delete++
		default:
			p.Summary.NoOp++
		}
		p.Changes = append(p.Changes, c)
	}
	if p.Changes == nil {
		p.Changes = []Change{}
	}
	slices.Sort(p.RequiredSecrets)
	p.RequiredSecrets = slices.Compact(p.RequiredSecrets)
	return p, nil
}

// planSecret decides whether a connection change needs its client secret:
// an enterprise connection whose OIDC material must be written (created,
// changed, or not confirmed by the federation service), or a social
// connection with its own credentials that is created or whose client_id
// changes. A no_op whose material is missing becomes an update.
func (s *Service) planSecret(c *Change, r *configdb.Resource, material map[string]string) {
	if c.Spec == nil {
		return
	}
	v := viewConnection(c.Spec)
	var cv connectionView
	if r != nil {
		cv = viewConnection(json.RawMessage(r.Spec))
	}
	switch v.Type {
	case "enterprise":
		if v.OIDC == nil {
			return
		}
		needs := r == nil || cv.Type != "enterprise" || !bytes.Equal(canonical(cv.OIDC), canonical(v.OIDC))
		if !needs && material[r.ResourceID] != materialHash(v.OIDC) {
			needs = true
			if c.Action == ActionNoOp {
				c.Action = ActionUpdate
			}
		}
		if needs {
			c.RequiresSecret, c.WritesMaterial, c.SecretRef = true, true, SecretRef(c.Key)
		}
	case "social":
		if v.Social == nil || !v.Social.UseOwnCredentials {
			return
		}
		if r == nil || cv.Social == nil || !cv.Social.UseOwnCredentials || cv.Social.ClientID != v.Social.ClientID {
			c.RequiresSecret, c.SecretRef = true, SecretRef(c.Key)
		}
	}
}

// uniqueHolder names a resource outside the document that holds u after
// the plan, or "": the first in key order of holders, the index of kind k.
func uniqueHolder(holders map[uniqueKey][]string, k Kind, key string, u UniqueValue, inDoc map[string]bool) string {
	for _, other := range holders[u.compared()] {
		if other != key && !inDoc[resourceRef(k, other)] {
			return resourceRef(k, other)
		}
	}
	return ""
}

func (s *Service) insertPlan(ctx context.Context, tx *configdb.Tx, a Actor, p *Plan) error {
	row := &configdb.PlanRow{EnvironmentID: p.EnvironmentID, ID: p.ID, Status: p.Status, Prune: p.Prune,
		Types: mustJSON(p.Types), TypeSet: typeSet(p.Types), ReferencingTypes: mustJSON(p.ReferencingTypes), Changes: mustJSON(changeRecords(p.Changes)),
		Warnings: mustJSON(p.Warnings), RequiredSecrets: mustJSON(p.RequiredSecrets), RequiresSPHost: p.RequiresSPHost,
		Summary: mustJSON(p.Summary), Versions: mustJSON(p.versions), Fingerprints: mustJSON(p.fingerprints),
		CreatedAt: time0(p.CreatedAt), ExpiresAt: time0(p.ExpiresAt), CreatedBy: p.CreatedBy}
	if size := len(row.Changes) + len(row.Warnings) + len(row.Versions); size > MaxPlanBytes {
		return &Error{Code: CodeConfigDocumentTooLarge,
			Detail: fmt.Sprintf("the plan would take %d bytes, over the limit of %d; plan fewer types", size, MaxPlanBytes)}
	}
	if err := tx.InsertPlan(ctx, row); err != nil {
		return err
	}
	p.storedStatus = row.Status
	return recordEvent(ctx, tx, a, p.ID, "plan_created", map[string]any{"summary": p.Summary})
}

func time0(t Time) time.Time { return time.Time(t) }

func sortedKindNames(ks []Kind) []Kind {
	out := slices.Clone(ks)
	if out == nil {
		out = []Kind{}
	}
	slices.Sort(out)
	return out
}

func sortProblems(ps []FieldError) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Pointer < ps[j].Pointer })
}

// referencePointer locates a reference problem at the field that holds the
// wrong value: a missing API at the grant's or the permission's `api` (once
// per grant, not once per scope), a missing scope at the permission's
// `scope` or the grant's scope.
func referencePointer(ref Reference, code Code) string {
	if ref.Kind != KindAPI {
		return ref.Pointer
	}
	if strings.HasPrefix(ref.Pointer, "/permissions/") {
		if code == CodeUnknownScope {
			return ref.Pointer + "/scope"
		}
		return ref.Pointer + "/api"
	}
	if i := strings.Index(ref.Pointer, "/scopes/"); i >= 0 && code == CodeDanglingReference {
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
	return canonical(mustJSON(m))
}
