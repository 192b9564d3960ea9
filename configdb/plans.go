package configdb

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// Stored plan statuses. An applying plan whose lease has passed, and a
// planned one past its validity, keep their stored status until a
// transition moves them; the domain computes the status shown.
const (
	planned    = "planned"
	applying   = "applying"
	applied    = "applied"
	conflicted = "conflicted"
	expired    = "expired"
	rejected   = "rejected"
)

// PlanKey names one plan of one environment.
type PlanKey struct {
	EnvironmentID string
	ID            string
}

// where is the condition on the plan's primary key.
func (k PlanKey) where() (string, string, string) {
	return "environment_id = ? AND id = ?", k.EnvironmentID, k.ID
}

// LoadPlan reads a stored plan (ErrNotFound when there is none). On
// PostgreSQL changes larger than changesWhole are read by ReadChanges.
func (r Reader) LoadPlan(ctx context.Context, k PlanKey) (*PlanRow, error) {
	var row PlanRow
	q, env, id := k.where()
	g := r.q(ctx)
	if !r.sqlite {
		g = g.Select(planColumns("config_plans"))
	}
	if err := g.Where(q, env, id).Take(&row).Error; err != nil {
		return nil, interpretError(err)
	}
	if err := r.CompleteChanges(ctx, &row); err != nil {
		return nil, err
	}
	return &row, nil
}

// changesPiece is the most bytes of a plan's stored changes that one row
// read on PostgreSQL carries. pgx reads a row into one buffer of its pool
// (pgproto3's chunkReader, from internal/iobufpool), grown to the next
// power of two of the row's size and kept in the pool after the row: a
// plan's 10 MiB of changes read as one row left a 16 MiB buffer in the
// heap, beside the changes' own copy, until two collections later (issue
// 34, P5). A piece and its row's few columns stay within 1 MiB.
const changesPiece = 1<<20 - 4<<10

// changesWhole is the most bytes of changes read with their plan's row:
// up to it the row stays within a 2 MiB buffer, and the apply of a plan
// of 1,000 creates (about 1.2 MB of changes: each spec and its diff) reads
// it in one statement, not two (its second statement cost that apply 6 ms
// of 70, BenchmarkApply/creates-1000); larger changes are read in pieces.
const changesWhole = 2<<20 - 4<<10

// planColumnList is the select list of planColumns after its alias.
var planColumnList = sync.OnceValue(func() []string {
	s, err := schema.Parse(&PlanRow{}, &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		panic(err)
	}
	var cols []string
	for _, f := range s.Fields {
		if f.DBName != "" && f.DBName != "changes" {
			cols = append(cols, f.DBName)
		}
	}
	return cols
})

// planColumns is the select list of a plan's row on PostgreSQL, of the
// table or subquery alias: every column of PlanRow, the changes only when
// they take at most changesWhole bytes (NULL otherwise); their size is
// the stored column changes_bytes (migration 0013), which the condition
// reads without reading the changes. A row read with it is completed by
// CompleteChanges.
func planColumns(alias string) string {
	return planColumnsAnd(alias, fmt.Sprintf("CASE WHEN %s.changes_bytes <= %d THEN %s.changes END AS changes", alias, changesWhole, alias))
}

// planColumnsWithoutChanges is planColumns with the changes NULL.
func planColumnsWithoutChanges(alias string) string {
	return planColumnsAnd(alias, "NULL::json AS changes")
}

// planColumnsAnd is every column of PlanRow but the changes, of alias,
// then changes, the select of the changes column.
func planColumnsAnd(alias, changes string) string {
	var b strings.Builder
	for _, c := range planColumnList() {
		b.WriteString(alias + "." + c + ", ")
	}
	b.WriteString(changes)
	return b.String()
}

// Complete reports whether the row holds its changes: read whole, or
// small enough to come with a row of planColumns.
func (row *PlanRow) Complete() bool {
	return row.Changes != nil || row.ChangesBytes == 0
}

// CompleteChanges reads the changes of a row read by planColumns without
// them (ReadChanges); a row that holds them is left as it is.
func (r Reader) CompleteChanges(ctx context.Context, row *PlanRow) error {
	if row.Complete() {
		return nil
	}
	changes, err := r.ReadChanges(ctx, PlanKey{EnvironmentID: row.EnvironmentID, ID: row.ID}, row.ChangesBytes)
	if err != nil {
		return err
	}
	row.Changes = changes
	return nil
}

// ReadChanges reads the stored changes of the plan k, n bytes (its
// changes_bytes), on PostgreSQL in rows of changesPiece bytes, which it
// puts together in one slice of n bytes: one statement, whose value is
// detoasted once (the subquery, not pulled up for its OFFSET 0) and cut
// by the series of its pieces. A plan's changes never change once it is
// stored. ErrNotFound when the plan is gone.
func (r Reader) ReadChanges(ctx context.Context, k PlanKey, n int64) (JSON, error) {
	if r.sqlite {
		row, err := r.LoadPlan(ctx, k)
		if err != nil {
			return nil, err
		}
		return row.Changes, nil
	}
	rs, err := r.q(ctx).Raw(`SELECT i, substring(c.b FROM i * ? + 1 FOR ?)
		FROM (SELECT convert_to(changes::text, 'UTF8') AS b FROM config_plans WHERE environment_id = ? AND id = ? OFFSET 0) c,
			generate_series(0, (octet_length(c.b) - 1) / ?) i`, changesPiece, changesPiece, k.EnvironmentID, k.ID, changesPiece).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	defer rs.Close()
	out := make(JSON, n)
	var got int64
	for rs.Next() {
		var i int64
		var piece sql.RawBytes
		if err := rs.Scan(&i, &piece); err != nil {
			return nil, err
		}
		if i < 0 || i*changesPiece+int64(len(piece)) > n {
			return nil, fmt.Errorf("plan %s: its changes are larger than the %d bytes read with its row", k.ID, n)
		}
		got += int64(copy(out[i*changesPiece:], piece))
	}
	if err := rs.Err(); err != nil {
		return nil, interpretError(err)
	}
	switch {
	case got == 0:
		return nil, ErrNotFound
	case got != n:
		return nil, fmt.Errorf("plan %s: %d bytes of changes read, %d stored", k.ID, got, n)
	}
	return out, nil
}

// PlanFilter selects a page of an environment's plans, newest first.
type PlanFilter struct {
	EnvironmentID string
	// Status is a status shown ("" for every plan): the rows that may have
	// it are read, since an expired or a planned-again plan is computed.
	Status string
	Before string // an id: only older plans
	Limit  int
	Now    time.Time
	// TypeSets are the type sets to read, unless AllTypeSets.
	TypeSets    []string
	AllTypeSets bool
}

// storedStatuses are the stored statuses of the plans whose effective status
// can be status ("" for any).
func storedStatuses(status string) []string {
	switch status {
	case planned:
		return []string{planned, applying}
	case expired:
		return []string{planned, applying, expired}
	case "":
		return []string{planned, applying, applied, conflicted, expired, rejected}
	}
	return []string{status}
}

// PlanTypeSets returns the distinct type sets of the environment's plans.
// They are read by a loose scan of the config_plans_type_set index, one
// probe per set: an environment has few (at most one per combination of its
// nine kinds), however many plans it keeps.
func (r Reader) PlanTypeSets(ctx context.Context, envID string) ([]string, error) {
	var present []string
	err := scanRaw(r.q(ctx).Raw(`WITH RECURSIVE sets(type_set) AS (
			SELECT MIN(type_set) FROM config_plans WHERE environment_id = ?
			UNION ALL
			SELECT (SELECT MIN(c.type_set) FROM config_plans c WHERE c.environment_id = ? AND c.type_set > sets.type_set)
			FROM sets WHERE sets.type_set IS NOT NULL)
		SELECT type_set FROM sets WHERE type_set IS NOT NULL`, envID, envID), &present)
	return present, interpretError(err)
}

// maxSetQueries bounds the per-set, per-status queries of one batch; past
// it one query filters on every set at once (its cost then grows with the
// plans the key can see, still not with those it cannot).
const maxSetQueries = 64

// ListPlans reads up to f.Limit plans of the environment older than
// f.Before, newest first, whose stored status can be f.Status and, unless
// f.AllTypeSets, whose type set is one of f.TypeSets. On PostgreSQL a
// row's changes larger than changesWhole are not read (planColumns): the
// caller reads those of the plans it answers with (CompleteChanges), not
// those of the row that only tells that there are more.
func (r Reader) ListPlans(ctx context.Context, f PlanFilter) ([]PlanRow, error) {
	var rows []PlanRow
	statuses := storedStatuses(f.Status)
	if f.AllTypeSets || len(f.TypeSets)*len(statuses) > maxSetQueries {
		q := r.q(ctx).Model(&PlanRow{}).Where("environment_id = ?", f.EnvironmentID)
		if !r.sqlite {
			q = q.Select(planColumns("config_plans"))
		}
		if f.Before != "" {
			q = q.Where("id < ?", f.Before)
		}
		if f.Status == planned {
			q = q.Where("expires_at > ?", f.Now)
		}
		if f.Status != "" {
			q = q.Where("status IN ?", statuses)
		}
		if !f.AllTypeSets {
			q = q.Where("type_set IN ?", f.TypeSets)
		}
		err := q.Order("id DESC").Limit(f.Limit).Find(&rows).Error
		return rows, interpretError(err)
	}
	// One query per (set, status), each the newest batch of its stretch of
	// the index, merged newest first: the database reads at most a batch
	// of rows of each, whatever the key cannot see.
	cond := "environment_id = ? AND type_set = ? AND status = ?"
	if f.Before != "" {
		cond += " AND id < ?"
	}
	if f.Status == planned {
		cond += " AND expires_at > ?"
	}
	var parts []string
	var args []any
	for _, set := range f.TypeSets {
		for _, st := range statuses {
			alias := fmt.Sprintf("s%d", len(parts))
			cols := "*"
			if !r.sqlite {
				cols = planColumns(alias)
			}
			parts = append(parts, fmt.Sprintf("SELECT %s FROM (SELECT * FROM config_plans WHERE %s ORDER BY id DESC LIMIT ?) AS %s", cols, cond, alias))
			args = append(args, f.EnvironmentID, set, st)
			if f.Before != "" {
				args = append(args, f.Before)
			}
			if f.Status == planned {
				args = append(args, f.Now)
			}
			args = append(args, f.Limit)
		}
	}
	err := scanRaw(r.q(ctx).Raw(strings.Join(parts, " UNION ALL ")+" ORDER BY id DESC LIMIT ?", append(args, f.Limit)...), &rows)
	return rows, interpretError(err)
}

// InsertPlan stores a new plan with ev, its plan_created event: on
// PostgreSQL in one statement, the event's insert reading the plan's.
func (tx *Tx) InsertPlan(ctx context.Context, row *PlanRow, ev PlanEventRow) error {
	if tx.sqlite {
		if err := tx.q(ctx).Create(row).Error; err != nil {
			return err
		}
		return tx.RecordEvent(ctx, ev)
	}
	stored, err := tx.insertPlanOnce(ctx, row, ev)
	if err == nil && !stored {
		err = errPlanIDTaken(row)
	}
	return err
}

// insertPlanOnce is InsertPlan's statement on PostgreSQL, which leaves a
// plan already stored under row's id as it is: stored reports whether
// this statement stored the plan and its event. Changes over
// largeParameter are no parameter of it: they are sent before it, in
// pieces, to a setting of its transaction (sendSetting), which it reads;
// on the pool, the pieces and the statement are a transaction of their
// own. Changes over releaseOver sent as its parameter are followed by
// releaseParameters on the same connection.
func (tx *Tx) insertPlanOnce(ctx context.Context, row *PlanRow, ev PlanEventRow) (stored bool, err error) {
	// The plan's INSERT is GORM's own, built and not run, so that it
	// follows the model; its parameters are numbered ($n), and so are the
	// event's after them.
	ins := tx.q(ctx).Session(&gorm.Session{DryRun: true}).Clauses(clause.OnConflict{DoNothing: true}).Create(row).Statement
	if ins.Error != nil {
		return false, ins.Error
	}
	events, evArgs := eventFrom("p", tx.Now, ev)
	tx.announce(ev)
	values, vars := ins.SQL.String(), ins.Vars
	large := len(row.Changes) > largeParameter
	if large {
		// The changes are the INSERT's last parameter
		// (TestPlanChangesAreTheLastParameterOfItsInsert), the last of
		// its values.
		last := "$" + strconv.Itoa(len(vars)) + ")"
		if strings.Count(values, last) != 1 {
			return false, fmt.Errorf("the plan's INSERT does not end its values with its changes: %s", values)
		}
		values = strings.Replace(values, last, "current_setting('"+changesSetting+"')::json)", 1)
		vars = vars[:len(vars)-1]
	}
	stmt, args := "WITH p AS ("+values+" RETURNING 1) "+numbered(events, len(vars)), append(vars, evArgs...)
	if !large && len(row.Changes) <= releaseOver {
		return rows(tx.q(ctx).Exec(stmt, args...))
	}
	// On the pool, the statement and the one before or after it share a
	// connection: a transaction for the setting, which is local to it.
	one := func(g *gorm.DB, fc func(*gorm.DB) error) error { return g.Transaction(fc) }
	insert := func(g *gorm.DB) (bool, error) {
		if err := sendSetting(ctx, g, changesSetting, row.Changes); err != nil {
			return false, err
		}
		return rows(g.Exec(stmt, args...))
	}
	if !large {
		one = func(g *gorm.DB, fc func(*gorm.DB) error) error { return g.Connection(fc) }
		insert = func(g *gorm.DB) (bool, error) {
			stored, err := rows(g.Exec(stmt, args...))
			if err == nil {
				releaseParameters(ctx, g, len(args)) // pgx lets go of the changes
			}
			return stored, err
		}
	}
	if _, inTx := tx.g.Statement.ConnPool.(*sql.Tx); inTx {
		return insert(tx.q(ctx))
	}
	err = one(tx.q(ctx), func(g *gorm.DB) error {
		stored, err = insert(g)
		return err
	})
	return stored, err
}

// largeParameter is the size of a value past which it is sent in pieces
// (sendSetting) rather than as a statement's parameter. As a parameter a
// value is held three times while its statement is sent (its own bytes,
// pgx's parameter buffer and the Bind message), and pgx keeps the slices
// of its parameter buffer in an array of its connection after the
// statement (ExtendedQueryBuilder.reset shortens ParamValues to 0 but
// keeps its elements when it has at most 64): a plan's changes, up to
// 10 MiB, stayed held by a connection idle in the pool (issue 34, P5).
// The pieces cost PostgreSQL more than the parameter: each set_config
// copies the setting's whole value, and the statement reads it back, so
// a plan of 1,000 creates (1.2 MB) took 64–71 ms to create through the
// setting and 41–45 ms as a parameter (P4, docs/benchmarks.md). Up to
// 4 MiB a value is a parameter, at most 12 MiB held while it is sent,
// and let go of after it (releaseParameters).
const largeParameter = 4 << 20

// releaseOver is the size of a parameter past which the statement that
// sent it is followed by releaseParameters on its connection.
const releaseOver = 256 << 10

// releaseParameters runs, on g's connection, a statement of n small
// parameters, after a statement of n parameters one of which was large.
// pgx encodes a statement's parameters into one buffer and, after the
// statement, shortens its array of slices of that buffer to 0 without
// clearing it when it has at most 64 elements
// (ExtendedQueryBuilder.reset): the buffer stays reachable from the
// connection, idle in the pool, until a later statement overwrites every
// slot (TestCreatePlanLeavesNoChangesHeldByItsConnection). Its error is
// not the caller's: the statement before it has done its work.
func releaseParameters(ctx context.Context, g *gorm.DB, n int) {
	cols := strings.Repeat("?::int, ", n)
	ones := make([]any, n)
	for i := range ones {
		ones[i] = 1
	}
	_ = g.WithContext(ctx).Exec("SELECT "+cols[:len(cols)-2], ones...).Error
}

// changesSetting is the setting of a transaction that a plan's changes
// over largeParameter are sent to (insertPlanOnce).
const changesSetting = "keenauth.changes"

// settingPiece is the most bytes of a value that one statement of
// sendSetting carries.
const settingPiece = 1<<20 - 4<<10

// sendSetting puts value, JSON text, in the setting name of g's
// transaction, in statements of at most settingPiece bytes each, cut
// between characters, for a statement after them to read
// (current_setting). The setting is local to the transaction
// (set_config's is_local): it is gone at its end, committed or not. Each
// statement answers the setting's length, not the setting; it is checked.
func sendSetting(ctx context.Context, g *gorm.DB, name string, value []byte) error {
	return appendSetting(ctx, g, name, -1, value)
}

// appendSetting is sendSetting appending value to the setting, which
// holds held bytes (-1: value starts it).
func appendSetting(ctx context.Context, g *gorm.DB, name string, held int, value []byte) error {
	for start := 0; start < len(value); {
		end := min(start+settingPiece, len(value))
		for end < len(value) && end > start && value[end]&0xC0 == 0x80 {
			end-- // a continuation byte of UTF-8: the character goes in the next piece
		}
		set := "?"
		if held >= 0 {
			set = "current_setting('" + name + "') || ?"
		}
		var n int
		if err := scanRaw(g.WithContext(ctx).Raw("SELECT octet_length(set_config('"+name+"', "+set+", true))", value[start:end]), &n); err != nil {
			return err
		}
		held = max(held, 0) + end - start
		if n != held {
			return fmt.Errorf("the setting %s holds %d bytes, %d were sent", name, n, held)
		}
		start = end
	}
	return nil
}

func errPlanIDTaken(row *PlanRow) error {
	return fmt.Errorf("plan id %s of environment %s is taken", row.ID, row.EnvironmentID)
}

// CreatePlan stores a new plan with ev, its plan_created event, outside
// any transaction: on PostgreSQL one statement without BEGIN and COMMIT
// (on SQLite, InsertPlan in a transaction of its own). The plan's id,
// chosen at random by the caller, makes the statement safe to run again:
// when a connection is lost with the statement in flight, it runs again,
// bounded as InTx retries, and a plan found already under that id is the
// one the lost statement stored. Both of its attempts carry now.
func (d *DB) CreatePlan(ctx context.Context, now time.Time, row *PlanRow, ev PlanEventRow) error {
	if d.sqlite {
		return d.InTx(ctx, sql.LevelDefault, func(tx *Tx) error {
			tx.Now = now
			return tx.InsertPlan(ctx, row, ev)
		})
	}
	tx := &Tx{Reader: d.Reader, Now: now, seam: d.opts.BeforeApplyWrite}
	inFlight := false // an earlier attempt may have stored the plan
	for attempt := 1; ; attempt++ {
		stored, err := tx.insertPlanOnce(ctx, row, ev)
		switch {
		case err == nil && !stored && inFlight:
			d.committed(tx)
			return nil
		case err == nil && !stored:
			return errPlanIDTaken(row)
		case outcomeUnknown(ctx, err):
			inFlight = true
			if ctx.Err() == nil {
				err = fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
		}
		if err == nil {
			d.committed(tx)
		}
		retry, err := d.again(ctx, attempt, err)
		if !retry && err != nil && inFlight {
			return fmt.Errorf("%w: %w", ErrCommitUnknown, err)
		}
		if !retry {
			return err
		}
	}
}

// Reads runs fn, the reads of a unit of work that writes nothing or
// writes by itself afterwards (CreatePlan): on PostgreSQL on the pool,
// each of its statements its own snapshot, retried on a lost connection
// as InTx is; on SQLite in a REPEATABLE READ transaction. fn's Tx must not
// write; its Now is now.
func (d *DB) Reads(ctx context.Context, now time.Time, fn func(tx *Tx) error) error {
	if d.sqlite {
		return d.InTx(ctx, sql.LevelRepeatableRead, func(tx *Tx) error {
			tx.Now = now
			return fn(tx)
		})
	}
	for attempt := 1; ; attempt++ {
		err := fn(&Tx{Reader: d.Reader, Now: now, seam: d.opts.BeforeApplyWrite})
		if retry, err := d.again(ctx, attempt, err); !retry {
			return err
		}
	}
}

// Now reads the clock of the database's transactions.
func (d *DB) Now() time.Time { return d.now() }

// numbered is sql with its ? parameters numbered $after+1, $after+2, …
// (sql holds no other question mark).
func numbered(sql string, after int) string {
	var b strings.Builder
	b.Grow(len(sql) + 32)
	for i := range len(sql) {
		if sql[i] != '?' {
			b.WriteByte(sql[i])
			continue
		}
		after++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(after))
	}
	return b.String()
}

// eventFrom is the insert of evs, at now, once for each row of the CTE
// named from: the events of a transition are recorded if and only if the
// transition happened, in the transition's statement.
func eventFrom(from string, now time.Time, evs ...PlanEventRow) (string, []any) {
	var b strings.Builder
	b.WriteString(`INSERT INTO plan_events (environment_id, plan_id, id, type, created_at, api_key_id, request_id, data)
		SELECT v.* FROM (VALUES `)
	args := make([]any, 0, 8*len(evs))
	for i, ev := range evs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?::timestamptz, ?, ?, ?::jsonb)")
		args = append(args, ev.EnvironmentID, ev.PlanID, ev.ID, ev.Type, now, ev.APIKeyID, ev.RequestID, string(ev.Data))
	}
	b.WriteString(") AS v, " + from)
	return b.String(), args
}

// transition moves the plan k, if cond holds of it, by set, and records
// evs when it moved: on PostgreSQL in one statement (a data-modifying CTE
// and the events' insert), on SQLite one after the other. moved reports
// whether the plan moved.
func (tx *Tx) transition(ctx context.Context, k PlanKey, cond string, condArgs []any, set map[string]any, evs ...PlanEventRow) (moved bool, err error) {
	q, env, id := k.where()
	where := q + " AND " + cond
	whereArgs := append([]any{env, id}, condArgs...)
	if tx.sqlite {
		if moved, err = rows(tx.q(ctx).Model(&PlanRow{}).Where(where, whereArgs...).Updates(set)); err != nil || !moved {
			return moved, err
		}
		return true, tx.RecordEvents(ctx, evs...)
	}
	var b strings.Builder
	var args []any
	for i, col := range slices.Sorted(maps.Keys(set)) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(col + " = ?")
		args = append(args, set[col])
	}
	events, evArgs := eventFrom("c", tx.Now, evs...)
	tx.announce(evs...)
	args = append(append(args, whereArgs...), evArgs...)
	return rows(tx.q(ctx).Exec("WITH c AS (UPDATE config_plans SET "+b.String()+" WHERE "+where+" RETURNING 1) "+events, args...))
}

// claimable is the condition on a plan that an apply can claim, with the
// transaction's time twice as its parameters: planned, or applying under a
// lease that has passed, and within its validity.
const claimable = "expires_at > ? AND (status = 'planned' OR (status = 'applying' AND lease_until <= ?))"

// ClaimPlan moves a plan planned → applying under token, with a lease
// until lease from now, keeps the Idempotency-Key fingerprint of the
// claim (nil: none), and records ev (apply_started). An applying plan
// whose lease has passed is claimed again; a plan past its validity is
// not. Of any number of concurrent claims, on any replica, one wins:
// claimed reports whether it is this one. On PostgreSQL it is one
// statement, to be run on its own (DB.InStatement).
func (tx *Tx) ClaimPlan(ctx context.Context, k PlanKey, token string, lease time.Duration, fingerprint *string, ev PlanEventRow) (claimed bool, err error) {
	return tx.transition(ctx, k, claimable, []any{tx.Now, tx.Now},
		map[string]any{"status": applying, "lease_token": token, "lease_until": tx.Now.Add(lease), "idempotency_fingerprint": fingerprint}, ev)
}

// RenewLease extends the apply lease that token holds to lease from now.
func (tx *Tx) RenewLease(ctx context.Context, k PlanKey, token string, lease time.Duration) error {
	q, env, id := k.where()
	return tx.q(ctx).Model(&PlanRow{}).Where(q+" AND lease_token = ?", env, id, token).
		Update("lease_until", tx.Now.Add(lease)).Error
}

// AppliedPlan is what an apply records on its plan.
type AppliedPlan struct {
	RevisionID  *string
	AppliedBy   string
	Fingerprint *string
	// Changes, when set, replace the stored changes (the ids of created
	// connections).
	Changes JSON
	// Finished: the apply is over (no OIDC material left to write), and
	// the plan is applied.
	Finished bool
}

// RecordApply records the apply of a plan that token holds, in the
// apply's transaction, or, with token "", of a plan that the transaction
// claims itself (LockForApply). It reports false when the plan is no
// longer applying under token (the lease was lost), or no longer
// claimable.
func (tx *Tx) RecordApply(ctx context.Context, k PlanKey, token string, a AppliedPlan) (bool, error) {
	updates := map[string]any{"revision_id": a.RevisionID, "applied_by": a.AppliedBy, "idempotency_fingerprint": a.Fingerprint}
	if a.Changes != nil {
		updates["changes"] = a.Changes
	}
	if a.Finished {
		updates["status"], updates["applied_at"], updates["lease_token"], updates["lease_until"] = applied, tx.Now, "", nil
	}
	cond, condArgs := heldBy(k, token, tx.Now)
	return rows(tx.q(ctx).Model(&PlanRow{}).Where(cond, condArgs...).Updates(updates))
}

// heldBy is the condition on the plan k that an apply holds: applying
// under token, or, with token "", claimable (by the apply's transaction,
// which locked it).
func heldBy(k PlanKey, token string, now time.Time) (string, []any) {
	q, env, id := k.where()
	if token == "" {
		return q + " AND " + claimable, []any{env, id, now, now}
	}
	return q + " AND status = 'applying' AND lease_token = ?", []any{env, id, token}
}

// FinishPlan makes applied the plan that token holds, once the federation
// service confirmed every write of its OIDC material.
func (tx *Tx) FinishPlan(ctx context.Context, k PlanKey, token string) (bool, error) {
	return tx.endLease(ctx, k, token, map[string]any{"status": applied, "applied_at": tx.Now})
}

// ReleasePlan returns to planned the plan that token holds, without the
// revision an apply may have recorded: the apply did not happen, or not
// all of it.
func (tx *Tx) ReleasePlan(ctx context.Context, k PlanKey, token string) (bool, error) {
	return tx.endLease(ctx, k, token, released())
}

// RejectClaim is ReleasePlan that records ev (apply_rejected) when the
// plan was released, on PostgreSQL in one statement (DB.InStatement).
func (tx *Tx) RejectClaim(ctx context.Context, k PlanKey, token string, ev PlanEventRow) (bool, error) {
	return tx.transition(ctx, k, "lease_token = ?", []any{token}, endedLease(released()), ev)
}

// RejectApply records evs (apply_started, apply_rejected) of an apply
// that claimed the plan in its own transaction, which rolled back: the
// plan did not move. On PostgreSQL in one statement (DB.InStatement).
func (tx *Tx) RejectApply(ctx context.Context, evs ...PlanEventRow) error {
	return tx.RecordEvents(ctx, evs...)
}

// ConflictApply makes conflicted a plan that an apply claimed in its own
// transaction, which rolled back on a conflict, if the plan is still
// claimable, and records evs (apply_started, apply_conflicted) when it
// moved; on PostgreSQL in one statement (DB.InStatement).
func (tx *Tx) ConflictApply(ctx context.Context, k PlanKey, evs ...PlanEventRow) (bool, error) {
	return tx.transition(ctx, k, claimable, []any{tx.Now, tx.Now}, endedLease(map[string]any{"status": conflicted, "revision_id": nil}), evs...)
}

func released() map[string]any { return map[string]any{"status": planned, "revision_id": nil} }

// MarkConflicted makes conflicted the plan that token holds: what it was
// planned against changed. It records ev (apply_conflicted) when it did,
// on PostgreSQL in one statement (DB.InStatement).
func (tx *Tx) MarkConflicted(ctx context.Context, k PlanKey, token string, ev PlanEventRow) (bool, error) {
	return tx.transition(ctx, k, "lease_token = ?", []any{token}, endedLease(map[string]any{"status": conflicted, "revision_id": nil}), ev)
}

func (tx *Tx) endLease(ctx context.Context, k PlanKey, token string, updates map[string]any) (bool, error) {
	q, env, id := k.where()
	return rows(tx.q(ctx).Model(&PlanRow{}).Where(q+" AND lease_token = ?", env, id, token).Updates(endedLease(updates)))
}

// endedLease is updates with the lease given up.
func endedLease(updates map[string]any) map[string]any {
	updates["lease_token"], updates["lease_until"] = "", nil
	return updates
}

// MarkExpired stores the expired status of a plan past its validity that
// is still planned (or applying), and records ev (plan_expired): false
// when it was not. On PostgreSQL it is one statement (DB.InStatement).
func (tx *Tx) MarkExpired(ctx context.Context, k PlanKey, ev PlanEventRow) (bool, error) {
	return tx.transition(ctx, k, "status IN ('planned','applying') AND expires_at <= ?", []any{tx.Now},
		map[string]any{"status": expired, "lease_token": "", "lease_until": nil}, ev)
}

// RecordEvent adds an event to a plan's history, at the transaction's time.
func (tx *Tx) RecordEvent(ctx context.Context, ev PlanEventRow) error {
	return tx.RecordEvents(ctx, ev)
}

// RecordEvents adds events to a plan's history, in one statement, at the
// transaction's time.
func (tx *Tx) RecordEvents(ctx context.Context, evs ...PlanEventRow) error {
	if len(evs) == 0 {
		return nil
	}
	rows := slices.Clone(evs)
	for i := range rows {
		rows[i].CreatedAt = tx.Now
	}
	tx.announce(evs...)
	return tx.q(ctx).Create(&rows).Error
}

// HasEvent reports whether a plan's history holds an event of type typ.
func (r Reader) HasEvent(ctx context.Context, k PlanKey, typ string) (bool, error) {
	var n int64
	err := r.q(ctx).Model(&PlanEventRow{}).Where("environment_id = ? AND plan_id = ? AND type = ?", k.EnvironmentID, k.ID, typ).Count(&n).Error
	return n > 0, interpretError(err)
}

// ListEvents reads up to limit events of a plan after the id after, oldest
// first.
func (r Reader) ListEvents(ctx context.Context, k PlanKey, after string, limit int) ([]PlanEventRow, error) {
	q := r.q(ctx).Where("environment_id = ? AND plan_id = ?", k.EnvironmentID, k.ID)
	if after != "" {
		q = q.Where("id > ?", after)
	}
	var rows []PlanEventRow
	if err := q.Order("id ASC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	return rows, nil
}

// DeleteFinishedPlans deletes up to limit plans of an environment created
// before cutoff that can no longer change (applied, conflicted, expired — a
// planned plan past its validity is expired), with their events and the
// webhook deliveries of those.
func (tx *Tx) DeleteFinishedPlans(ctx context.Context, envID string, cutoff time.Time, limit int) (plans, events int, err error) {
	var ids []string
	err = tx.q(ctx).Model(&PlanRow{}).Where("environment_id = ? AND created_at < ?", envID, cutoff).
		Where("status NOT IN (?, ?) OR (status = ? AND expires_at <= ?)", planned, applying, planned, tx.Now).
		Order("id").Limit(limit).Pluck("id", &ids).Error
	if err != nil || len(ids) == 0 {
		return 0, 0, err
	}
	r := tx.q(ctx).Exec("DELETE FROM plan_events WHERE environment_id = ? AND plan_id IN ?", envID, ids)
	if r.Error != nil {
		return 0, 0, r.Error
	}
	events = int(r.RowsAffected)
	if err := tx.q(ctx).Exec("DELETE FROM plan_approvals WHERE environment_id = ? AND plan_id IN ?", envID, ids).Error; err != nil {
		return 0, 0, err
	}
	// The deliveries of their events follow them (§19).
	if err := tx.q(ctx).Exec("DELETE FROM webhook_deliveries WHERE environment_id = ? AND plan_id IN ?", envID, ids).Error; err != nil {
		return 0, 0, err
	}
	r = tx.q(ctx).Exec("DELETE FROM config_plans WHERE environment_id = ? AND id IN ?", envID, ids)
	return int(r.RowsAffected), events, r.Error
}

// SettledClaim reports whether the plan is applying under token, read once
// the transaction that last held the plan's row has ended: after a
// connection was lost with its COMMIT in flight, the server may still be
// committing that transaction (it received COMMIT) or about to roll it
// back (it finds the connection gone), and until then it holds the plan's
// row, which every claim and apply updates. A shared lock waits for that
// end; its row is the outcome. (SQLite has one writer and no row locks:
// its row is the outcome already.)
func (r Reader) SettledClaim(ctx context.Context, k PlanKey, token string) (bool, error) {
	var row PlanRow
	q, env, id := k.where()
	g := r.q(ctx)
	if !r.sqlite {
		g = g.Clauses(clause.Locking{Strength: "SHARE"})
	}
	if err := g.Select("status", "lease_token").Where(q, env, id).Take(&row).Error; err != nil {
		return false, interpretError(err)
	}
	return row.Status == applying && row.LeaseToken == token, nil
}
