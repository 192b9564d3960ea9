package configdb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keenauth/configplans/revisions"

	"github.com/keenauth/configplans/canonjson"
)

// The writes of an apply on PostgreSQL go in few statements, whatever the
// size of the plan: one per kind of resource write (creates, updates,
// deletions), many rows each from one jsonb parameter
// (jsonb_to_recordset), and one for everything the apply records after
// them (generations, revision and its pruning, management log, the plan's
// state, its event), as data-modifying CTEs. SQLite, in the process, runs
// the same writes one statement each.

// ResourceUpdate is a new spec over version of one resource.
type ResourceUpdate struct {
	Kind, Key      string
	Version        int
	Spec           JSON
	DisplayNameKey *string
}

// ResourceDeletion names one resource at version.
type ResourceDeletion struct {
	Kind, Key string
	Version   int
}

// ResourceWrites are the resource writes of an apply.
type ResourceWrites struct {
	Creates []Resource
	Updates []ResourceUpdate
	Deletes []ResourceDeletion
	// FromPlan, when set, names where the stored plan holds the specs of
	// the creates and updates: on PostgreSQL, when they are over 1 MiB
	// (specsFromPlanOver), the statements read them there instead of being
	// sent them again.
	FromPlan *PlanSpecs
}

// PlanSpecs locates the specs of an apply's writes in its stored plan.
// The specs are the plan's size, and a parameter carrying them is held
// three times by the process while it is sent (the parameter, pgx's
// encoded value and its Bind message: 30 MB for a plan of 10 MB); the
// plan's row, already in PostgreSQL, holds the same bytes.
type PlanSpecs struct {
	Plan PlanKey
	// Creates[i] and Updates[i] are the positions, in the plan's stored
	// changes, of the changes of ResourceWrites.Creates[i] and Updates[i].
	Creates, Updates []int
}

// WriteResources creates (version 1), updates (to version+1) and deletes
// resources of envID at the transaction's time. An update or deletion
// that finds its resource no longer at its version asks for the
// transaction to run again.
func (tx *Tx) WriteResources(ctx context.Context, envID string, w ResourceWrites) error {
	if err := tx.beforeApplyWrite(); err != nil {
		return err
	}
	if tx.sqlite {
		return tx.writeResourcesEach(ctx, envID, w)
	}
	for _, st := range tx.resourceWrites(envID, w) {
		if err := tx.execAll(ctx, st.what, st.n, st.sql, st.args...); err != nil {
			return err
		}
	}
	return nil
}

// writeResourcesEach is WriteResources one resource at a time.
func (tx *Tx) writeResourcesEach(ctx context.Context, envID string, w ResourceWrites) error {
	for _, u := range w.Updates {
		if err := tx.UpdateResource(ctx, envID, u.Kind, u.Key, u.Version, u.Spec, u.DisplayNameKey); err != nil {
			return err
		}
	}
	for _, d := range w.Deletes {
		if err := tx.DeleteResource(ctx, envID, d.Kind, d.Key, d.Version); err != nil {
			return err
		}
	}
	return tx.CreateResources(ctx, w.Creates)
}

// resourceWrite is one statement of the resource writes on PostgreSQL,
// which must change n rows.
type resourceWrite struct {
	what string
	n    int
	sql  string
	args []any
}

// resourceWrites are the statements of w, in the order they must run:
// deletions, updates, then creations, so that a unique value (a display
// name) given up by one resource can be taken by another.
func (tx *Tx) resourceWrites(envID string, w ResourceWrites) []resourceWrite {
	var out []resourceWrite
	if len(w.Deletes) > 0 {
		type del struct {
			Kind    string `json:"kind"`
			Key     string `json:"key"`
			Version int    `json:"version"`
		}
		rows := make([]del, len(w.Deletes))
		for i, d := range w.Deletes {
			rows[i] = del(d)
		}
		out = append(out, resourceWrite{"delete resources", len(rows), `DELETE FROM resources r USING jsonb_to_recordset(?::jsonb) AS t(kind text, key text, version int)
			WHERE r.environment_id = ? AND r.kind = t.kind AND r.key = t.key AND r.version = t.version`, []any{mustRecords(rows), envID}})
	}
	// The specs come from the parameter, or from the stored plan's
	// changes: an uncorrelated scalar subquery, which PostgreSQL runs once
	// per statement (an InitPlan), makes them one jsonb value, and each
	// row takes its change by position (jsonb's arrays are indexed, where
	// json -> i parses the value from its start). A join on the rows of
	// json_array_elements let the planner pick a nested loop that ran the
	// function, parsing the whole 10 MB value, once per change: on a
	// database of many plans an apply of 995 updates took 30 s.
	spec, fromArgs := "t.spec", []any(nil)
	var creates, updates []int
	if f := w.FromPlan; f != nil && w.specBytes() > specsFromPlanOver {
		spec, creates, updates = "((SELECT cp.changes::jsonb FROM config_plans cp WHERE cp.environment_id = ? AND cp.id = ?) -> t.change -> 'spec')", f.Creates, f.Updates
		fromArgs = []any{f.Plan.EnvironmentID, f.Plan.ID}
	}
	if len(w.Updates) > 0 {
		rows := specRecords(len(w.Updates), func(i int) writeRecord {
			u := w.Updates[i]
			return writeRecord{u.Kind, u.Key, u.Version, "", u.Spec, at(updates, i), u.DisplayNameKey}
		})
		out = append(out, resourceWrite{"update resources", len(w.Updates), `UPDATE resources r SET spec = ` + spec + `, display_name_key = t.display_name_key,
				version = t.version + 1, updated_at = ?
			FROM jsonb_to_recordset(?::jsonb) AS t(kind text, key text, version int, spec jsonb, change int, display_name_key text)
			WHERE r.environment_id = ? AND r.kind = t.kind AND r.key = t.key AND r.version = t.version`,
			append(slices.Clip(fromArgs), tx.Now, rows, envID)})
	}
	if len(w.Creates) > 0 {
		rows := specRecords(len(w.Creates), func(i int) writeRecord {
			c := w.Creates[i]
			return writeRecord{c.Kind, c.Key, 1, c.ResourceID, c.Spec, at(creates, i), c.DisplayNameKey}
		})
		out = append(out, resourceWrite{"create resources", len(w.Creates), `INSERT INTO resources (environment_id, kind, key, resource_id, version, spec,
				display_name_key, created_at, updated_at)
			SELECT ?, t.kind, t.key, t.resource_id, 1, ` + spec + `, t.display_name_key, ?, ?
			FROM jsonb_to_recordset(?::jsonb) AS t(kind text, key text, resource_id text, spec jsonb, change int, display_name_key text)`,
			append(append([]any{envID}, fromArgs...), tx.Now, tx.Now, rows)})
	}
	return out
}

// specsFromPlanOver is the size of an apply's specs over which they are
// read from the stored plan (FromPlan). Below it the parameter's copies
// are small, and sending them is cheaper for PostgreSQL: jsonb_to_recordset
// parses them once, where the stored changes hold a create's spec twice
// (its spec and its diff) and are parsed twice (the array, then each
// change). P1's apply of 1,000 creates (0.6 MB of specs) was about a
// third slower reading them from the plan.
const specsFromPlanOver = 1 << 20

// specBytes is the size of the specs of the creates and updates.
func (w ResourceWrites) specBytes() int {
	n := 0
	for _, c := range w.Creates {
		n += len(c.Spec)
	}
	for _, u := range w.Updates {
		n += len(u.Spec)
	}
	return n
}

// at is positions[i], or -1 when there are no positions (the spec is
// sent).
func at(positions []int, i int) int {
	if positions == nil {
		return -1
	}
	return positions[i]
}

// execAll runs a write that must change n rows; fewer is a retry.
func (tx *Tx) execAll(ctx context.Context, what string, n int, sql string, args ...any) error {
	res := tx.q(ctx).Exec(sql, args...)
	if res.Error != nil {
		return res.Error
	}
	if int(res.RowsAffected) != n {
		return ErrRetry(fmt.Sprintf("%s: %d of %d rows at their version", what, res.RowsAffected, n))
	}
	return nil
}

// writeRecord is one resource write of specRecords. Change, when not
// -1, is the position of the write's change in the stored plan, which
// holds its spec: the spec is then not sent.
type writeRecord struct {
	Kind, Key      string
	Version        int
	ResourceID     string
	Spec           JSON
	Change         int
	DisplayNameKey *string
}

// specRecords is the jsonb parameter of n resource writes, each
// {"kind","key","version","resource_id","spec" or "change","display_name_key"},
// built by appending: a spec is canonical JSON already (it was validated
// and encoded by the domain), and encoding/json would validate and compact
// every one again. It is built in a strings.Builder of its final size, so
// that the string is not one more copy of every spec.
func specRecords(n int, row func(i int) writeRecord) string {
	size := 2
	for i := range n {
		if r := row(i); r.Change < 0 {
			size += len(r.Spec)
		}
		size += 128
	}
	var b strings.Builder
	b.Grow(size)
	var scratch []byte
	str := func(s string) {
		scratch = canonjson.AppendString(scratch[:0], s)
		b.Write(scratch)
	}
	b.WriteByte('[')
	for i := range n {
		r := row(i)
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"kind":`)
		str(r.Kind)
		b.WriteString(`,"key":`)
		str(r.Key)
		b.WriteString(`,"version":`)
		b.WriteString(strconv.Itoa(r.Version))
		b.WriteString(`,"resource_id":`)
		str(r.ResourceID)
		switch {
		case r.Change >= 0:
			b.WriteString(`,"change":`)
			b.WriteString(strconv.Itoa(r.Change))
		case len(r.Spec) == 0:
			b.WriteString(`,"spec":null`)
		default:
			b.WriteString(`,"spec":`)
			b.Write(r.Spec)
		}
		b.WriteString(`,"display_name_key":`)
		if r.DisplayNameKey == nil {
			b.WriteString("null")
		} else {
			str(*r.DisplayNameKey)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String()
}

// logShared are the fields that the log rows of an apply share (all of
// them but id, type and data): sent once, as parameters of their own,
// rather than on each of a thousand rows, which PostgreSQL would parse
// from the jsonb parameter each time.
type logShared struct {
	CreatedAt           time.Time
	APIKeyID, RequestID string
	PlanID, RevisionID  *string
}

func (s logShared) of(l LogRow) bool {
	same := func(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	return l.CreatedAt.Equal(s.CreatedAt) && l.APIKeyID == s.APIKeyID && l.RequestID == s.RequestID &&
		same(l.PlanID, s.PlanID) && same(l.RevisionID, s.RevisionID)
}

// args are the shared fields as the parameters of logInsert's statement:
// the time as the text a row would hold, so that PostgreSQL reads both
// alike.
func (s logShared) args() []any {
	return []any{s.CreatedAt.Format(time.RFC3339Nano), s.APIKeyID, s.RequestID, s.PlanID, s.RevisionID}
}

// logInsert inserts the log rows of logRecords: a row's own fields when
// it has them ("own"), the shared ones (the five parameters after the
// environment's) otherwise.
const logInsert = `INSERT INTO management_logs (environment_id, id, type, created_at, api_key_id, request_id, plan_id, revision_id, data)
			SELECT ?, t.id, t.type, CASE WHEN t.own THEN t.created_at ELSE ?::timestamptz END,
				CASE WHEN t.own THEN t.api_key_id ELSE ?::text END, CASE WHEN t.own THEN t.request_id ELSE ?::text END,
				CASE WHEN t.own THEN t.plan_id ELSE ?::text END, CASE WHEN t.own THEN t.revision_id ELSE ?::text END, t.data
			FROM jsonb_to_recordset(?::jsonb) AS t(id text, type text, own boolean, created_at timestamptz, api_key_id text,
				request_id text, plan_id text, revision_id text, data jsonb)`

// logRecords is the jsonb parameter of the log rows, and the fields they
// share (those of the first row): a row that has the shared ones is
// {"id", "type", "data"}; another also has "own": true and its
// "created_at", "api_key_id", "request_id", "plan_id" and "revision_id".
// It is built by appending, as specRecords is: an entry's data is JSON
// the domain encoded, which encoding/json would validate and compact
// again, once per changed resource.
func logRecords(logs []LogRow) (string, logShared) {
	var shared logShared
	if len(logs) > 0 {
		l := logs[0]
		shared = logShared{CreatedAt: l.CreatedAt, APIKeyID: l.APIKeyID, RequestID: l.RequestID, PlanID: l.PlanID, RevisionID: l.RevisionID}
	}
	size := 2
	for _, l := range logs {
		size += len(l.ID) + len(l.Type) + len(l.Data) + 40
		if !shared.of(l) {
			size += len(l.APIKeyID) + len(l.RequestID) + 200
		}
	}
	b := make([]byte, 0, size)
	str := func(name, s string) {
		b = append(b, name...)
		b = canonjson.AppendString(b, s)
	}
	optional := func(name string, s *string) {
		if s == nil {
			b = append(append(b, name...), "null"...)
			return
		}
		str(name, *s)
	}
	b = append(b, '[')
	for i, l := range logs {
		if i > 0 {
			b = append(b, ',')
		}
		str(`{"id":`, l.ID)
		str(`,"type":`, l.Type)
		if !shared.of(l) {
			b = append(b, `,"own":true,"created_at":"`...)
			b = append(l.CreatedAt.AppendFormat(b, time.RFC3339Nano), '"')
			str(`,"api_key_id":`, l.APIKeyID)
			str(`,"request_id":`, l.RequestID)
			optional(`,"plan_id":`, l.PlanID)
			optional(`,"revision_id":`, l.RevisionID)
		}
		b = append(b, `,"data":`...)
		if len(l.Data) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, l.Data...)
		}
		b = append(b, '}')
	}
	return string(append(b, ']')), shared
}

// mustRecords is rows as one jsonb parameter (a string: the driver must
// not take a byte slice for bytea).
func mustRecords(rows any) string {
	b, err := json.Marshal(rows)
	if err != nil {
		panic(err) // strings, numbers and valid JSON only
	}
	return string(b)
}

// ApplyRecord is what an apply records once its changes are written.
type ApplyRecord struct {
	EnvironmentID string
	// Kinds are the written kinds: their generations and the
	// environment's move (nothing when empty).
	Kinds []string
	// Revision, when set, is stored with Resources (revisions.Encode),
	// and the environment's revisions past the Keep newest (this one
	// included) or past their age are pruned.
	Revision  *revisions.Revision
	Resources []byte
	// ResourcesSent, on PostgreSQL, tells that the revision's resources
	// were sent by SendRevision (Resources is then nil).
	ResourcesSent bool
	Keep          int
	Logs          []LogRow
	// The plan's new state, under the lease of Token, or with Token "" of
	// a plan that the transaction claimed (LockForApply).
	Plan    PlanKey
	Token   string
	Applied AppliedPlan
	// Events are added to the plan's history.
	Events []PlanEventRow
	// Writes are the apply's resource writes, written first: on
	// PostgreSQL the last of their statements is part of the record's.
	Writes ResourceWrites
}

// RecordApplyOutcome writes r in the transaction. recorded is false when
// the plan is no longer applying under r.Token (the lease was lost), or no
// longer claimable: the caller rolls back. pruned is how many revisions
// were pruned.
func (tx *Tx) RecordApplyOutcome(ctx context.Context, r ApplyRecord) (recorded bool, pruned int, err error) {
	if err := tx.beforeApplyWrite(); err != nil {
		return false, 0, err
	}
	if tx.sqlite {
		if err := tx.writeResourcesEach(ctx, r.EnvironmentID, r.Writes); err != nil {
			return false, 0, err
		}
		return tx.recordApplyOutcomeEach(ctx, r)
	}
	var q withQuery
	// The resource writes run in their order; the last one is a CTE of
	// the record: the record's CTEs touch no resource, so that running
	// concurrently with them changes nothing, and a round trip is saved.
	writes := tx.resourceWrites(r.EnvironmentID, r.Writes)
	written := "SELECT 0"
	var last resourceWrite
	if len(writes) > 0 {
		last, writes = writes[len(writes)-1], writes[:len(writes)-1]
		for _, st := range writes {
			if err := tx.execAll(ctx, st.what, st.n, st.sql, st.args...); err != nil {
				return false, 0, err
			}
		}
		q.add("w", last.sql, last.args...)
		written = "SELECT count(*) FROM w"
	}
	if len(r.Kinds) > 0 {
		q.add("g", "UPDATE type_states SET generation = generation + 1 WHERE environment_id = ? AND kind IN (SELECT jsonb_array_elements_text(?::jsonb))",
			r.EnvironmentID, mustRecords(r.Kinds))
		q.add("e", "UPDATE environments SET generation = generation + 1 WHERE id = ?", r.EnvironmentID)
	}
	prune, revision, err := tx.addRevision(ctx, &q, r)
	if err != nil {
		return false, 0, err
	}
	if len(r.Logs) > 0 {
		records, shared := logRecords(r.Logs)
		q.add("l", logInsert, append(append([]any{r.EnvironmentID}, shared.args()...), records)...)
	}
	set, setArgs := appliedSet(r.Applied, tx.Now)
	cond, condArgs := heldBy(r.Plan, r.Token, tx.Now)
	q.add("p", "UPDATE config_plans SET "+set+" WHERE "+cond, append(setArgs, condArgs...)...)
	if len(r.Events) > 0 {
		// Recorded with the plan's update, as a transition's are.
		events, evArgs := eventFrom("(SELECT 1 FROM p) AS pe", tx.Now, r.Events...)
		tx.announce(r.Events...)
		q.parts = append(q.parts, "ev AS ("+events+" RETURNING 1)")
		q.args = append(q.args, evArgs...)
	}
	// The revision's resources are the last parameter: pgx appends every
	// parameter to one buffer, and a parameter appended after them grows
	// it again while the earlier values still point into the old one —
	// two copies of the revision, then two more in the Bind message.
	if revision != nil {
		revision()
	}
	sql := "WITH " + strings.Join(q.parts, ", ") +
		" SELECT (SELECT count(*) FROM p) AS recorded, (" + prune + ") AS pruned, (" + written + ") AS written"
	var out struct {
		Recorded int
		Pruned   int
		Written  int
	}
	if err := scanRaw(tx.q(ctx).Raw(sql, q.args...), &out); err != nil {
		return false, 0, err
	}
	if revision != nil && !r.ResourcesSent && len(r.Resources) > releaseOver && len(r.Resources) <= largeParameter {
		releaseParameters(ctx, tx.q(ctx), len(q.args)) // the revision was the statement's parameter
	}
	if out.Written != last.n {
		return false, 0, ErrRetry(fmt.Sprintf("%s: %d of %d rows at their version", last.what, out.Written, last.n))
	}
	return out.Recorded > 0, out.Pruned, nil
}

// withQuery gathers the CTEs of one WITH statement and their parameters.
type withQuery struct {
	parts []string
	args  []any
}

// add adds the CTE name, a write that returns a row per row written.
func (q *withQuery) add(name, sql string, a ...any) {
	q.parts = append(q.parts, name+" AS ("+sql+" RETURNING 1)")
	q.args = append(q.args, a...)
}

// addRevision adds the prune of the environment's revisions to q, and
// returns the select of its count and the insert of the revision, which
// the caller adds last (its resources are the statement's last parameter).
// Resources over largeParameter are sent before, in pieces (sendSetting),
// and are no parameter. Without a revision it adds nothing.
func (tx *Tx) addRevision(ctx context.Context, q *withQuery, r ApplyRecord) (prune string, insert func(), err error) {
	if r.Revision == nil {
		return "SELECT 0", nil, nil
	}
	types, _ := json.Marshal(r.Revision.Types)
	counts, _ := json.Marshal(r.Revision.Counts)
	// The resources go as the bytes they are: string(r.Resources) would
	// be one more copy of the revision (up to 10 MiB) while it is sent.
	// The parameter is json by its cast, which pgx encodes from bytes
	// as they are.
	resources, args := "?::json", []any{r.Resources}
	if len(r.Resources) > largeParameter {
		if err := sendSetting(ctx, tx.q(ctx), revisionSetting, r.Resources); err != nil {
			return "", nil, err
		}
	}
	if len(r.Resources) > largeParameter || r.ResourcesSent {
		resources, args = "current_setting('"+revisionSetting+"')::json", nil
	}
	insert = func() {
		q.add("r", `INSERT INTO config_revisions (environment_id, id, plan_id, types, counts, created_at, expires_at, resources)
			VALUES (?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, `+resources+`)`, append([]any{r.EnvironmentID, r.Revision.ID, r.Revision.PlanID, string(types), string(counts),
			r.Revision.CreatedAt, r.Revision.ExpiresAt}, args...)...)
	}
	// The statement does not see the revision it inserts: of the
	// others, the Keep-1 newest stay.
	q.add("pr", `DELETE FROM config_revisions WHERE environment_id = ? AND id <> ? AND (expires_at <= ? OR id IN (
		SELECT id FROM config_revisions WHERE environment_id = ? AND id <> ? ORDER BY id DESC OFFSET ?))`,
		r.EnvironmentID, r.Revision.ID, tx.Now, r.EnvironmentID, r.Revision.ID, max(r.Keep-1, 0))
	return "SELECT count(*) FROM pr", insert, nil
}

// SendRevision sends a piece of the revision's resources of the apply
// (revisions.EncodeInPieces: it ends between resources, so between
// characters), held bytes of them sent before it, to the
// setting the record reads them from (ApplyRecord.ResourcesSent): the
// revision is not held whole while it is sent. PostgreSQL only.
func (tx *Tx) SendRevision(ctx context.Context, held int, piece []byte) error {
	if tx.sqlite {
		return fmt.Errorf("a revision is sent in pieces on PostgreSQL only")
	}
	if held == 0 {
		held = -1
	}
	return appendSetting(ctx, tx.q(ctx), revisionSetting, held, piece)
}

// revisionSetting is the setting of the transaction that a revision's
// resources over largeParameter are sent to (addRevision): as the
// record's parameter they were held three times while it was sent (issue
// 34, P5).
const revisionSetting = "keenauth.revision"

// recordApplyOutcomeEach is RecordApplyOutcome one statement at a time.
func (tx *Tx) recordApplyOutcomeEach(ctx context.Context, r ApplyRecord) (bool, int, error) {
	if err := tx.BumpGenerations(ctx, r.EnvironmentID, r.Kinds); err != nil {
		return false, 0, err
	}
	pruned := 0
	if r.Revision != nil {
		if err := tx.RecordRevision(*r.Revision, r.Resources); err != nil {
			return false, 0, err
		}
		var err error
		if pruned, err = tx.PruneRevisions(r.EnvironmentID, r.Keep); err != nil {
			return false, 0, err
		}
	}
	if len(r.Logs) > 0 {
		if err := tx.RecordLogs(ctx, r.Logs); err != nil {
			return false, 0, err
		}
	}
	recorded, err := tx.RecordApply(ctx, r.Plan, r.Token, r.Applied)
	if err != nil || !recorded {
		return false, pruned, err
	}
	if err := tx.RecordEvents(ctx, r.Events...); err != nil {
		return false, pruned, err
	}
	return true, pruned, nil
}

// appliedSet is the SET clause of RecordApply for a.
func appliedSet(a AppliedPlan, now time.Time) (string, []any) {
	set := "revision_id = ?, applied_by = ?, idempotency_fingerprint = ?"
	args := []any{a.RevisionID, a.AppliedBy, a.Fingerprint}
	if a.Changes != nil {
		set += ", changes = ?::json"
		args = append(args, string(a.Changes))
	}
	if a.Finished {
		set += ", status = '" + applied + "', applied_at = ?, lease_token = '', lease_until = NULL"
		args = append(args, now)
	}
	return set, args
}
