package plans

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// Status is the status of a plan.
type Status string

// Plan statuses.
const (
	StatusPlanned    Status = "planned"
	StatusApplying   Status = "applying"
	StatusApplied    Status = "applied"
	StatusConflicted Status = "conflicted"
	StatusExpired    Status = "expired"
	// StatusRejected is final: the plan was rejected or withdrawn (§17).
	StatusRejected Status = "rejected"
	// StatusPreview is the status of a plan previewed, never stored (§14).
	StatusPreview Status = "preview"
)

// Action is what a change does to its resource.
type Action string

// Change actions.
const (
	ActionCreate Action = "create"
	ActionUpdate Action = "update"
	ActionDelete Action = "delete"
	ActionNoOp   Action = "no_op"
)

// LogVerb is the verb of the management log's entry of a change,
// "<kind>.<verb>": created, updated or deleted ("" for a no_op, which
// writes no entry).
func (a Action) LogVerb() string {
	switch a {
	case ActionCreate:
		return "created"
	case ActionUpdate:
		return "updated"
	case ActionDelete:
		return "deleted"
	}
	return ""
}

// Change is one planned change of a resource.
type Change struct {
	Kind           config.Kind     `json:"kind"`
	Key            string          `json:"key"`
	Action         Action          `json:"action"`
	BaseVersion    *int            `json:"base_version"`
	Spec           json.RawMessage `json:"spec"`
	Diff           []config.DiffOp `json:"diff"`
	RequiresSecret bool            `json:"requires_secret"`
	SecretRef      string          `json:"secret_ref,omitempty"`
	// ResourceID is the connection id (con_…): JSON null for a connection
	// not created yet, absent for the other kinds.
	ResourceID json.RawMessage `json:"resource_id,omitempty"`
	// WritesMaterial marks an enterprise connection whose OIDC material the
	// apply writes to the federation service.
	WritesMaterial bool `json:"-"`
	// KeepsMaterial marks an enterprise connection whose document said
	// oidc: null, planned with the material it had: a rebase asks for the
	// material as it is then, not as it was.
	KeepsMaterial bool `json:"-"`
}

// changeRecord is how a change is stored: the public fields plus internal ones.
type changeRecord struct {
	Change
	WritesMaterial bool `json:"writes_material,omitempty"`
	KeepsMaterial  bool `json:"keeps_material,omitempty"`
}

// Warning is a warning of a plan.
type Warning struct {
	Code    config.Code `json:"code"`
	Target  string      `json:"target"`
	Pointer string      `json:"pointer"`
	Detail  string      `json:"detail"`
	// Rule names the guardrail rule of a rule_warning or a rule_approval
	// (§18), Approvals the approvals a rule_approval asks for.
	Rule      string `json:"rule,omitempty"`
	Approvals int    `json:"approvals,omitempty"`
}

// Summary counts the changes of a plan by action.
type Summary struct {
	Create int `json:"create"`
	Update int `json:"update"`
	Delete int `json:"delete"`
	NoOp   int `json:"no_op"`
}

// Plan is a config plan as the API shows it.
type Plan struct {
	ID               string        `json:"id"`
	Object           string        `json:"object"`
	EnvironmentID    string        `json:"environment_id"`
	Status           Status        `json:"status"`
	Prune            bool          `json:"prune"`
	Types            []config.Kind `json:"types"`
	ReferencingTypes []config.Kind `json:"referencing_types"`
	Changes          []Change      `json:"changes"`
	Warnings         []Warning     `json:"warnings"`
	RequiredSecrets  []string      `json:"required_secrets"`
	RequiresSPHost   bool          `json:"requires_sp_host"`
	Summary          Summary       `json:"summary"`
	CreatedAt        Time          `json:"created_at"`
	ExpiresAt        Time          `json:"expires_at"`
	AppliedAt        *Time         `json:"applied_at"`
	RevisionID       *string       `json:"revision_id"`
	CreatedBy        string        `json:"created_by"`
	// CreatedByOwner is the owner of the key that created the plan (§17).
	CreatedByOwner *string `json:"created_by_owner"`
	// RebasedFrom is the plan a rebase was made from (nil: not a rebase),
	// and Moved what had moved since that plan was computed.
	RebasedFrom *string   `json:"rebased_from"`
	Moved       MovedList `json:"moved"`
	// Approvals, ApprovalsRequired and Rejection are the review of the
	// plan (§17), read with it (withReview).
	Approvals         []Approval `json:"approvals"`
	ApprovalsRequired int        `json:"approvals_required"`
	Rejection         *Rejection `json:"rejection"`

	versions     map[string]int
	fingerprints map[config.Kind]int64
	// storedStatus is the status as stored, which the status shown may
	// not be (an expired plan is expired before it is marked so).
	storedStatus string
	// keyFingerprint is the fingerprint of the Idempotency-Key request
	// that claimed the plan (nil: none).
	keyFingerprint *string
	// changesJSON is Changes as JSON, appended once for the stored row
	// and spliced into the answer (keepChangesJSON).
	changesJSON changesJSON
}

// PlanPreview is the plan that plan creation would store, as a preview
// shows it (§14): status preview, and no id, expiry or creator, since
// nothing is stored.
type PlanPreview struct {
	*Plan
}

// MarshalJSON writes the plan with id, expires_at and created_by null.
func (p PlanPreview) MarshalJSON() ([]byte, error) {
	type plain Plan
	return json.Marshal(struct {
		ID *string `json:"id"`
		*plain
		ExpiresAt      *Time   `json:"expires_at"`
		CreatedBy      *string `json:"created_by"`
		CreatedByOwner *string `json:"created_by_owner"`
	}{plain: (*plain)(p.Plan)})
}

// Time marshals as RFC 3339 UTC with milliseconds.
type Time time.Time

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"`), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error {
	var tt time.Time
	if err := json.Unmarshal(b, &tt); err != nil {
		return err
	}
	*t = Time(tt)
	return nil
}

func timePtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := Time(*t)
	return &v
}

func resourceRef(kind config.Kind, key string) string { return string(kind) + "/" + key }

// appendRef appends resourceRef(kind, key) to b: a map read by
// m[string(appendRef(…))] makes no string, where resourceRef makes one for
// every resource of an apply's checks.
func appendRef(b []byte, kind config.Kind, key string) []byte {
	return append(append(append(b, kind...), '/'), key...)
}

// planFromRow decodes a stored plan. The status shown is the effective one:
// an applying plan whose lease has passed is planned again, a planned plan
// past its validity is expired.
func (s *Service) planFromRow(r *configdb.PlanRow) (*Plan, error) {
	return s.planFromRowWith(r, nil)
}

// planFromRowWith is planFromRow with the plan's changes, when kept is not
// nil: the row is read without them (changesCache).
func (s *Service) planFromRowWith(r *configdb.PlanRow, kept []Change) (*Plan, error) {
	p := &Plan{ID: r.ID, Object: "config_plan", EnvironmentID: r.EnvironmentID, Status: effectiveStatus(r, s.now()),
		Prune: r.Prune, RequiresSPHost: r.RequiresSPHost, CreatedAt: Time(r.CreatedAt), ExpiresAt: Time(r.ExpiresAt),
		AppliedAt: timePtr(r.AppliedAt), RevisionID: r.RevisionID, CreatedBy: r.CreatedBy, CreatedByOwner: r.CreatedByOwner,
		storedStatus: r.Status, keyFingerprint: r.IdempotencyFingerprint, RebasedFrom: r.RebasedFrom, Approvals: []Approval{}}
	if p.Status != StatusApplied {
		// A plan with OIDC material shows its revision only once the
		// federation service confirmed every write.
		p.RevisionID = nil
	}
	var recs []changeRecord
	if r.Changes != nil {
		var err error
		if recs, err = decodeChangeRecords(r.Changes); err != nil {
			return nil, fmt.Errorf("plan %s: decode: %w", r.ID, err)
		}
	}
	for _, f := range []struct {
		src []byte
		dst any
	}{{r.Types, &p.Types}, {r.ReferencingTypes, &p.ReferencingTypes}, {r.Warnings, &p.Warnings},
		{r.RequiredSecrets, &p.RequiredSecrets}, {r.Summary, &p.Summary}, {r.Fingerprints, &p.fingerprints},
		{r.Moved, &p.Moved}} {
		if f.src == nil {
			continue // moved of a plan that is not a rebase
		}
		if err := json.Unmarshal(f.src, f.dst); err != nil {
			return nil, fmt.Errorf("plan %s: decode: %w", r.ID, err)
		}
	}
	if r.Versions != nil {
		// One entry for each resource of the plan: read in one pass.
		var err error
		if p.versions, err = decodeVersions(r.Versions); err != nil {
			return nil, fmt.Errorf("plan %s: decode: %w", r.ID, err)
		}
	}
	// The decoded changes are all that is used from here on: the row lets
	// go of the stored bytes (up to 10 MiB); the specs and diff values are
	// slices of them, alive as long as the plan is.
	r.Changes = nil
	if kept != nil {
		p.Changes = kept
	} else {
		p.Changes = make([]Change, len(recs))
	}
	if len(r.Rejection) > 0 && string(r.Rejection) != "null" {
		p.Rejection = new(Rejection)
		if err := json.Unmarshal(r.Rejection, p.Rejection); err != nil {
			return nil, fmt.Errorf("plan %s: decode rejection: %w", r.ID, err)
		}
	}
	for i, rc := range recs {
		c := rc.Change
		if string(c.Spec) == "null" {
			c.Spec = nil // a deletion
		}
		c.WritesMaterial, c.KeepsMaterial = rc.WritesMaterial, rc.KeepsMaterial
		if c.Diff == nil {
			c.Diff = []config.DiffOp{}
		}
		p.Changes[i] = c
	}
	return p, nil
}

func effectiveStatus(r *configdb.PlanRow, now time.Time) Status {
	switch Status(r.Status) {
	case StatusApplying:
		if r.LeaseUntil != nil && !now.Before(*r.LeaseUntil) {
			if !now.Before(r.ExpiresAt) {
				return StatusExpired
			}
			return StatusPlanned
		}
	case StatusPlanned:
		if !now.Before(r.ExpiresAt) {
			return StatusExpired
		}
	}
	return Status(r.Status)
}

// GetPlan returns a plan of the actor's environment. It needs config:read
// and the read permission of every planned type.
func (s *Service) GetPlan(ctx context.Context, a Actor, id string) (*Plan, error) {
	p, err := s.loadPlan(ctx, a.EnvironmentID, id)
	if err != nil {
		return nil, err
	}
	if err := a.Require(readPerms(p.Types, config.PermConfigRead)...); err != nil {
		return nil, err
	}
	return p, nil
}

// loadPlan reads the plan id of envID with its approvals and the
// approvals it needs under the policies in force (on PostgreSQL one
// statement: LoadReviewedPlan). The changes of a plan this process created
// come from its cache, when they still are the stored ones (changesCache).
func (s *Service) loadPlan(ctx context.Context, envID, id string) (*Plan, error) {
	if !config.ValidID(config.PrefixPlan, id) {
		return nil, &config.Error{Code: config.CodeNotFound, Detail: "no such config plan"}
	}
	k := configdb.PlanKey{EnvironmentID: envID, ID: id}
	kept := s.changes.get(k)
	read := s.db.LoadReviewedPlan
	if kept != nil {
		read = s.db.LoadReviewedPlanHead
	}
	r, err := read(ctx, k)
	if err != nil {
		if isNotFound(err) {
			return nil, &config.Error{Code: config.CodeNotFound, Detail: "no such config plan"}
		}
		return nil, err
	}
	var changes []Change
	if kept != nil && !r.Plan.Complete() {
		if kept.serves(r.Plan) {
			changes = kept.changes
		} else {
			s.changes.forget(k)
			if err := s.db.CompleteChanges(ctx, r.Plan); err != nil {
				return nil, err
			}
		}
	}
	if observe := s.hooks.OnPlanRead; observe != nil {
		from := "database"
		if changes != nil {
			from = "cache"
		}
		observe(from)
	}
	p, err := s.planFromRowWith(r.Plan, changes)
	if err != nil {
		return nil, err
	}
	pol, err := policiesOf(r.Policies)
	if err != nil {
		return nil, err
	}
	setReview(p, r.Approvals, pol)
	return p, nil
}

func readPerms(kinds []config.Kind, extra ...string) []string {
	out := append([]string(nil), extra...)
	for _, k := range kinds {
		if info, ok := config.LookupKind(k); ok {
			out = append(out, info.ReadPerm)
		}
	}
	return sortedUnique(out)
}

// Page is one page of a cursor-paginated list.
type Page[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// ListParams are the pagination parameters of a list.
type ListParams struct {
	Limit  int
	Cursor string
}

// page trims rows fetched with limit+1 to a page, newest first.
func page[T any](rows []T, limit int, id func(T) string) Page[T] {
	p := Page[T]{Data: rows}
	if p.Data == nil {
		p.Data = []T{}
	}
	if len(rows) > limit {
		p.Data = rows[:limit]
		p.HasMore = true
		c := id(rows[limit-1])
		p.NextCursor = &c
	}
	return p
}

// ListPlans lists the plans of the actor's environment, newest first,
// optionally only those of one status. It needs config:read; the plans
// listed are those whose types the key may read, every one of them.
func (s *Service) ListPlans(ctx context.Context, a Actor, status string, lp ListParams) (Page[*Plan], error) {
	if err := a.Require(config.PermConfigRead); err != nil {
		return Page[*Plan]{}, err
	}
	switch Status(status) {
	case "", StatusPlanned, StatusApplying, StatusApplied, StatusConflicted, StatusExpired, StatusRejected:
	default:
		return Page[*Plan]{}, &config.Error{Code: config.CodeMalformedRequest, Detail: "status must be one of planned, applying, applied, conflicted, expired, rejected",
			Errors: []config.FieldError{{Pointer: "", Code: config.CodeInvalid, Detail: "unknown status " + config.QuoteShort(status)}}}
	}
	now := s.now()
	sets, all, err := s.readableTypeSets(ctx, a)
	if err != nil {
		return Page[*Plan]{}, err
	}
	if !all && len(sets) == 0 {
		return page([]*Plan{}, lp.Limit, func(p *Plan) string { return p.ID }), nil
	}
	var out []*Plan
	cursor := lp.Cursor
	// Statuses are partly computed (lease and validity), and a plan of the
	// type set '' is checked once decoded, so filter after decoding too and
	// keep reading until the page is full.
	for len(out) <= lp.Limit {
		batch := lp.Limit + 1
		rows, err := s.db.ListPlans(ctx, configdb.PlanFilter{EnvironmentID: a.EnvironmentID, Status: status, Before: cursor,
			Limit: batch, Now: now, TypeSets: sets, AllTypeSets: all})
		if err != nil {
			return Page[*Plan]{}, err
		}
		for i := range rows {
			complete := rows[i].Complete() // planFromRow lets go of the changes
			p, err := s.planFromRow(&rows[i])
			if err != nil {
				return Page[*Plan]{}, err
			}
			if (status == "" || p.Status == Status(status)) && a.Can(readPerms(p.Types)) {
				if len(out) < lp.Limit && !complete {
					// A plan of the page whose changes were too large
					// to come with its row; the plan after the page,
					// read to tell that there are more, keeps its
					// changes unread. One deleted since its row was
					// read is left out, as a list read after it would.
					err := s.db.CompleteChanges(ctx, &rows[i])
					if isNotFound(err) {
						continue
					}
					if err != nil {
						return Page[*Plan]{}, err
					}
					if p, err = s.planFromRow(&rows[i]); err != nil {
						return Page[*Plan]{}, err
					}
				}
				out = append(out, p)
			}
		}
		if len(rows) < batch {
			break
		}
		cursor = rows[len(rows)-1].ID
	}
	pg := page(out, lp.Limit, func(p *Plan) string { return p.ID })
	return pg, withReview(ctx, s.db, a.EnvironmentID, pg.Data...)
}

// typeSet is the stored type_set of a plan of these types: the kinds sorted
// bytewise and joined by commas.
func typeSet(types []config.Kind) string {
	names := kindStrings(types)
	slices.Sort(names)
	return strings.Join(names, ",")
}

// readableTypeSets returns the type sets of the environment's plans that a
// can read, with all true when it can read every one (the list then needs
// no type filter). The set "" (a plan written without its set) is always
// kept: its plans are checked once decoded.
func (s *Service) readableTypeSets(ctx context.Context, a Actor) (sets []string, all bool, err error) {
	present, err := s.db.PlanTypeSets(ctx, a.EnvironmentID)
	if err != nil {
		return nil, false, err
	}
	all = true
	for _, set := range present {
		var kinds []config.Kind
		if set != "" {
			for _, k := range strings.Split(set, ",") {
				kinds = append(kinds, config.Kind(k))
			}
		}
		if set == "" || a.Can(readPerms(kinds)) {
			sets = append(sets, set)
		} else {
			all = false
		}
	}
	return sets, all, nil
}

// key names the plan in the storage.
func (p *Plan) key() configdb.PlanKey {
	return configdb.PlanKey{EnvironmentID: p.EnvironmentID, ID: p.ID}
}
