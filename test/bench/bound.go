package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oklog/ulid/v2"
)

// bound writes, with bare pgx, the rows that the service writes for the
// same work: the lower bounds of P1 and P2. Every statement of a
// transaction goes in one batch (one round trip), many rows in one
// statement through unnest; nothing is read back. It writes into an
// environment of its own, created like the server's.
type bound struct {
	pool *pgxpool.Pool
}

func newID(prefix string) string { return prefix + strings.ToLower(ulid.Make().String()) }

// keyedSpec is a resource key and its canonical spec.
type keyedSpec struct {
	key  string
	spec []byte
}

// The statements of an apply, as the service writes them (plans/apply.go,
// configdb/applywrites.go): the revision's resources go to a json column.
const (
	sqlBumpTypes = `UPDATE type_states SET generation = generation + 1 WHERE environment_id = $1 AND kind = 'api'`
	sqlBumpEnv   = `UPDATE environments SET generation = generation + 1 WHERE id = $1`
	sqlRevision  = `INSERT INTO config_revisions (environment_id, id, plan_id, types, counts, resources, created_at, expires_at)
		VALUES ($1, $2, $3, '["api"]', $4::jsonb, $5::json, $6, $7)`
	sqlPrune = `DELETE FROM config_revisions WHERE environment_id = $1 AND (expires_at <= $2 OR id IN (
		SELECT id FROM config_revisions WHERE environment_id = $1 ORDER BY id DESC OFFSET 50))`
	sqlLogs = `INSERT INTO management_logs (environment_id, id, type, created_at, api_key_id, request_id, plan_id, revision_id, data)
		SELECT $1, t.id, t.typ, $2, $3, $4, $5, $6, t.d::jsonb FROM unnest($7::text[], $8::text[], $9::text[]) AS t(id, typ, d)`
	sqlPlanApplied = `UPDATE config_plans SET status = 'applied', applied_at = $3, revision_id = $4, applied_by = $5,
		idempotency_fingerprint = NULL, lease_token = '', lease_until = NULL WHERE environment_id = $1 AND id = $2`
	sqlEvents = `INSERT INTO plan_events (environment_id, plan_id, id, type, created_at, api_key_id, request_id, data)
		SELECT $1, $2, t.id, t.typ, $3, $4, $5, t.d::jsonb FROM unnest($6::text[], $7::text[], $8::text[]) AS t(id, typ, d)`
)

// revisionEntry is one resource of a revision as the service stores it
// (revisions.Encode).
type revisionEntry struct {
	Kind             string          `json:"kind"`
	Key              string          `json:"key"`
	Action           string          `json:"action"`
	VersionBefore    *int            `json:"version_before"`
	SpecBefore       json.RawMessage `json:"spec_before"`
	ResourceIDBefore string          `json:"resource_id_before,omitempty"`
}

// applyWrites queues the writes common to every apply: type and
// environment generations, the revision and its pruning, the management
// log (one config.applied entry and one per resource), the plan's new
// state (no Idempotency-Key: P1 and P2 send none) and its two events.
func applyWrites(b *pgx.Batch, ek envKey, planID string, now time.Time, action string, rev []revisionEntry, counts map[string]int, versions []int) {
	revID, reqID := newID("cfgr_"), newID("req_")
	revJSON, _ := json.Marshal(rev)
	countsJSON, _ := json.Marshal(counts)
	b.Queue(sqlBumpTypes, ek.EnvID)
	b.Queue(sqlBumpEnv, ek.EnvID)
	b.Queue(sqlRevision, ek.EnvID, revID, planID, string(countsJSON), string(revJSON), now, now.Add(90*24*time.Hour))
	b.Queue(sqlPrune, ek.EnvID, now)
	ids, types, data := []string{newID("log_")}, []string{"config.applied"}, []string{string(countsJSON)}
	for i, r := range rev {
		d, _ := json.Marshal(map[string]any{"kind": r.Kind, "key": r.Key, "version": versions[i]})
		ids, types, data = append(ids, newID("log_")), append(types, "api."+action), append(data, string(d))
	}
	b.Queue(sqlLogs, ek.EnvID, now, ek.KeyID, reqID, planID, revID, ids, types, data)
	b.Queue(sqlPlanApplied, ek.EnvID, planID, now, revID, ek.KeyID)
	b.Queue(sqlEvents, ek.EnvID, planID, now, ek.KeyID, reqID,
		[]string{newID("evt_"), newID("evt_")}, []string{"apply_started", "apply_succeeded"},
		[]string{"{}", fmt.Sprintf(`{"revision_id":%q,"counts":%s}`, revID, countsJSON)})
}

// runBatch sends b in one transaction at REPEATABLE READ, like the apply.
func (bd *bound) runBatch(ctx context.Context, b *pgx.Batch) error {
	tx, err := bd.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// applyCreates writes the rows of an apply that creates every resource of
// specs (api resources) for the plan planID, and returns how long it took.
func (bd *bound) applyCreates(ctx context.Context, ek envKey, planID string, specs []keyedSpec) (time.Duration, error) {
	start := time.Now()
	now := start.UTC().Truncate(time.Microsecond)
	keys, bodies := make([]string, len(specs)), make([]string, len(specs))
	rev, versions := make([]revisionEntry, len(specs)), make([]int, len(specs))
	for i, s := range specs {
		keys[i], bodies[i] = s.key, string(s.spec)
		rev[i] = revisionEntry{Kind: "api", Key: s.key, Action: "create", SpecBefore: json.RawMessage("null")}
		versions[i] = 1
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO resources (environment_id, kind, key, resource_id, version, spec, display_name_key, created_at, updated_at)
		SELECT $1, 'api', t.k, '', 1, t.s::jsonb, NULL, $2, $2 FROM unnest($3::text[], $4::text[]) AS t(k, s)`, ek.EnvID, now, keys, bodies)
	applyWrites(b, ek, planID, now, "created", rev, map[string]int{"created": len(specs), "updated": 0, "deleted": 0, "unchanged": 0}, versions)
	if err := bd.runBatch(ctx, b); err != nil {
		return 0, fmt.Errorf("bound apply of %d creates: %w", len(specs), err)
	}
	return time.Since(start), nil
}

// pairState is what a P2 bound client keeps of its one resource.
type pairState struct {
	key     string
	version int
	spec    []byte
}

// planThenApply writes what a plan creation and the apply of that plan
// write for the update of one resource, as two transactions (writePlan,
// then writeApply). It returns how long the second (the apply's) took.
func (bd *bound) planThenApply(ctx context.Context, ek envKey, st *pairState, next []byte) (time.Duration, error) {
	planID, err := bd.writePlan(ctx, ek, *st, next)
	if err != nil {
		return 0, err
	}
	return bd.writeApply(ctx, ek, st, planID, next)
}

// writePlan writes the plan of an update of st's resource to next, and its
// plan_created event, and returns the plan's id.
func (bd *bound) writePlan(ctx context.Context, ek envKey, st pairState, next []byte) (string, error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	planID := newID("cfgp_")
	v := st.version
	change, _ := json.Marshal([]map[string]any{{"kind": "api", "key": st.key, "action": "update", "base_version": v,
		"spec": json.RawMessage(next), "requires_secret": false,
		"diff": []map[string]any{{"op": "replace", "path": "/scopes/0/description", "old": "…", "value": "…"}}}})
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO config_plans (environment_id, id, status, prune, types, type_set, referencing_types, changes, warnings,
		required_secrets, requires_sp_host, summary, versions, fingerprints, created_at, expires_at, created_by)
		VALUES ($1, $2, 'planned', false, '["api"]', 'api', '[]', $3::json, '[]', '[]', false,
		'{"create":0,"update":1,"delete":0,"no_op":0}', $4::jsonb, '{"api":1}', $5, $6, $7)`,
		ek.EnvID, planID, string(change), fmt.Sprintf(`{"api/%s":%d}`, st.key, v), now, now.Add(24*time.Hour), ek.KeyID)
	b.Queue(`INSERT INTO plan_events (environment_id, plan_id, id, type, created_at, api_key_id, request_id, data)
		VALUES ($1, $2, $3, 'plan_created', $4, $5, $6, '{"summary":{"create":0,"update":1,"delete":0,"no_op":0}}')`,
		ek.EnvID, planID, newID("evt_"), now, ek.KeyID, newID("req_"))
	if err := bd.runBatch(ctx, b); err != nil {
		return "", fmt.Errorf("bound plan: %w", err)
	}
	return planID, nil
}

// writeApply writes the apply of the plan planID (writePlan's, for st and
// next): the resource, the generations, the revision, the management log,
// the plan's state and its events; st is the resource's new state after
// it. It returns how long it took.
func (bd *bound) writeApply(ctx context.Context, ek envKey, st *pairState, planID string, next []byte) (time.Duration, error) {
	start := time.Now()
	now := start.UTC().Truncate(time.Microsecond)
	v := st.version
	b := &pgx.Batch{}
	b.Queue(`UPDATE resources SET spec = $5::jsonb, display_name_key = NULL, version = $4 + 1, updated_at = $6
		WHERE environment_id = $1 AND kind = $2 AND key = $3 AND version = $4`, ek.EnvID, "api", st.key, v, string(next), now)
	applyWrites(b, ek, planID, now, "updated", []revisionEntry{{Kind: "api", Key: st.key, Action: "update", VersionBefore: &v, SpecBefore: st.spec}},
		map[string]int{"created": 0, "updated": 1, "deleted": 0, "unchanged": 0}, []int{v + 1})
	if err := bd.runBatch(ctx, b); err != nil {
		return 0, fmt.Errorf("bound apply: %w", err)
	}
	st.version, st.spec = v+1, next
	return time.Since(start), nil
}

// resourceState reads the version and spec of one resource (not timed).
func (bd *bound) resourceState(ctx context.Context, envID, key string) (pairState, error) {
	st := pairState{key: key}
	err := bd.pool.QueryRow(ctx, `SELECT version, spec::text FROM resources WHERE environment_id = $1 AND kind = 'api' AND key = $2`,
		envID, key).Scan(&st.version, &st.spec)
	return st, err
}
