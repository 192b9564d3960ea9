package configdb

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Selection names the resources of an environment to read: whole kinds,
// single resources, and the resources of a kind that hold one of some
// unique values.
type Selection struct {
	Kinds []string
	// Keys are [kind, key] pairs (outside Kinds).
	Keys [][2]string
	// Unique is kind → unique field → compared values (outside Kinds): a
	// display name folded (display_name_key), an identifier as it is.
	Unique map[string]map[string][]string
}

// loadBatch is how many keys or values one query names.
const loadBatch = 500

// LoadResources reads the resources sel names. A resource may be read
// more than once (by key and by unique value, when the selection takes
// more than one query); the caller keeps one. The parts of the selection
// are one query (UNION), one round trip, unless they name more values
// than maxQueryArgs.
func (r Reader) LoadResources(ctx context.Context, envID string, sel Selection) ([]Resource, error) {
	qs, err := r.resourceQueries(envID, sel)
	if err != nil {
		return nil, err
	}
	return r.runResourceQueries(ctx, qs)
}

// runResourceQueries runs queries of resources.
func (r Reader) runResourceQueries(ctx context.Context, qs []query) ([]Resource, error) {
	var out []Resource
	for _, q := range qs {
		var rows []Resource
		if err := r.q(ctx).Raw(q.sql, q.args...).Find(&rows).Error; err != nil {
			return nil, interpretError(err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// query is a statement and its parameters.
type query struct {
	sql  string
	args []any
}

// resourceQueries are the queries of the resources sel names: one, unless
// they name more values than maxQueryArgs.
func (r Reader) resourceQueries(envID string, sel Selection) ([]query, error) {
	var out []query
	var parts []string
	var args []any
	// The parts select keys, which UNION makes distinct, and the rows are
	// read once for them: a resource named by its key and by its unique
	// values (an apply's own resources) is not read, and held, twice.
	flush := func() {
		if len(parts) > 0 {
			out = append(out, query{"SELECT r.* FROM resources r JOIN (" + strings.Join(parts, " UNION ") +
				") AS s ON r.kind = s.kind AND r.key = s.key WHERE r.environment_id = ?", append(args, envID)})
			parts, args = nil, nil
		}
	}
	// find adds a part of n+1 parameters.
	find := func(cond string, n int, a ...any) {
		if len(args)+n+2 > maxQueryArgs {
			flush()
		}
		parts = append(parts, "SELECT kind, key FROM resources WHERE environment_id = ? AND "+cond)
		args = append(append(args, envID), a...)
	}
	for _, k := range sel.Kinds {
		find("kind = ?", 1, k)
	}
	// On PostgreSQL each list is one jsonb parameter, whatever its length:
	// the planner plans a list of n parameters as n conditions, which for
	// the 1,000 keys and identifiers of an apply took 4–6 ms for a
	// statement that then ran in 0.2 ms. The keys need no part reading
	// resources: the join on resources keeps those that exist. SQLite has
	// no such cost, and lists in batches.
	switch {
	case len(sel.Keys) == 0:
	case !r.sqlite:
		parts = append(parts, "SELECT t.kind, t.key FROM jsonb_to_recordset(?::jsonb) AS t(kind text, key text)")
		args = append(args, keyRecords(sel.Keys))
	default:
		for pairs := sel.Keys; len(pairs) > 0; {
			batch := pairs[:min(len(pairs), loadBatch)]
			pairs = pairs[len(batch):]
			pa := make([][]any, len(batch))
			for i, p := range batch {
				pa[i] = []any{p[0], p[1]}
			}
			find("(kind, key) IN ?", 2*len(batch), pa)
		}
	}
	for k, fields := range sel.Unique {
		for field, values := range fields {
			col, err := r.uniqueColumn(field)
			if err != nil {
				return nil, err
			}
			switch {
			case len(values) == 0:
			case !r.sqlite:
				find("kind = ? AND "+col+" = ANY (ARRAY(SELECT jsonb_array_elements_text(?::jsonb)))", 2, k, mustRecords(values))
			default:
				for len(values) > 0 {
					batch := values[:min(len(values), loadBatch)]
					values = values[len(batch):]
					find("kind = ? AND "+col+" IN ?", 1+len(batch), k, batch)
				}
			}
			if field == "display_name" {
				// A row without its key (written by a replica of the release
				// before migration 0004, during a rolling upgrade, after the
				// migrator's backfill) may hold any name: it is read too, and
				// compared on the key computed from its spec. There are none
				// once every replica writes the key.
				find("kind = ? AND display_name_key IS NULL", 1, k)
			}
		}
	}
	flush()
	return out, nil
}

// keyRecords is the JSON of [kind, key] pairs as records of kind and key.
func keyRecords(pairs [][2]string) string {
	type record struct {
		Kind string `json:"kind"`
		Key  string `json:"key"`
	}
	rows := make([]record, len(pairs))
	for i, p := range pairs {
		rows[i] = record{p[0], p[1]}
	}
	return mustRecords(rows)
}

// maxQueryArgs bounds the parameters of one query of LoadResources, far
// under PostgreSQL's 65,535 and SQLite's 32,766.
const maxQueryArgs = 8000

// uniqueColumn is the SQL expression, indexed, that holds the compared
// form of a unique field of a spec: the stored folded display name, the
// identifier itself. The fields come from a fixed set, never from a request.
func (r Reader) uniqueColumn(field string) (string, error) {
	switch field {
	case "display_name":
		return "display_name_key", nil
	case "identifier":
		if r.sqlite {
			return "json_extract(spec, '$.identifier')", nil
		}
		return "(spec->>'identifier')", nil
	}
	return "", fmt.Errorf("no unique field %q", field)
}

// LoadKinds reads every resource of kinds.
func (r Reader) LoadKinds(ctx context.Context, envID string, kinds []string) ([]Resource, error) {
	if len(kinds) == 0 {
		return nil, nil
	}
	var rows []Resource
	if err := r.q(ctx).Where("environment_id = ? AND kind IN ?", envID, kinds).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	return rows, nil
}

// LoadResource reads one resource (ErrNotFound when there is none).
func (r Reader) LoadResource(ctx context.Context, envID, kind, key string) (*Resource, error) {
	var row Resource
	if err := r.q(ctx).Where("environment_id = ? AND kind = ? AND key = ?", envID, kind, key).Take(&row).Error; err != nil {
		return nil, interpretError(err)
	}
	return &row, nil
}

// LoadGenerations reads the generation of each of kinds.
func (r Reader) LoadGenerations(ctx context.Context, envID string, kinds []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(kinds) == 0 {
		return out, nil
	}
	var rows []TypeState
	if err := r.q(ctx).Where("environment_id = ? AND kind IN ?", envID, kinds).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	for _, row := range rows {
		out[row.Kind] = row.Generation
	}
	return out, nil
}

// LockEnvironment reads the environment and locks it for the rest of the
// transaction: the applies of one environment never interleave. Under
// REPEATABLE READ a lock that waited for another apply's commit fails with
// a serialization error, and InTx runs the transaction again on a fresh
// snapshot. NO KEY UPDATE, the lock the generation's UPDATE takes anyway:
// FOR UPDATE would also hold back the foreign-key checks of every row
// written for the environment (plans, events) until the apply ends. SQLite
// has no row locks (its dialector drops the clause): there the first write
// or a retry takes the database's write lock instead (see sqlite.go).
func (tx *Tx) LockEnvironment(ctx context.Context, envID string) (Environment, error) {
	var env Environment
	err := tx.q(ctx).Clauses(clause.Locking{Strength: "NO KEY UPDATE"}).Where("id = ?", envID).Take(&env).Error
	return env, err
}

// CreateResources inserts new resources (version 1) at the transaction's time.
func (tx *Tx) CreateResources(ctx context.Context, rs []Resource) error {
	if len(rs) == 0 {
		return nil
	}
	for i := range rs {
		rs[i].CreatedAt, rs[i].UpdatedAt = tx.Now, tx.Now
	}
	return tx.q(ctx).CreateInBatches(rs, 500).Error
}

// UpdateResource writes a new spec (with its folded display name, nil for
// a kind without one) over version, making it version+1. A resource no
// longer at version asks for the transaction to run again.
func (tx *Tx) UpdateResource(ctx context.Context, envID, kind, key string, version int, spec JSON, displayNameKey *string) error {
	ok, err := rows(tx.q(ctx).Model(&Resource{}).Where("environment_id = ? AND kind = ? AND key = ? AND version = ?", envID, kind, key, version).
		Updates(map[string]any{"spec": spec, "display_name_key": displayNameKey, "version": version + 1, "updated_at": tx.Now}))
	if err == nil && !ok {
		err = ErrRetry("update " + kind + "/" + key)
	}
	return err
}

// DeleteResource deletes a resource at version. A resource no longer at
// version asks for the transaction to run again.
func (tx *Tx) DeleteResource(ctx context.Context, envID, kind, key string, version int) error {
	ok, err := rows(tx.q(ctx).Where("environment_id = ? AND kind = ? AND key = ? AND version = ?", envID, kind, key, version).Delete(&Resource{}))
	if err == nil && !ok {
		err = ErrRetry("delete " + kind + "/" + key)
	}
	return err
}

// BumpGenerations moves the generation of each of kinds and of the
// environment: their content changed.
func (tx *Tx) BumpGenerations(ctx context.Context, envID string, kinds []string) error {
	if len(kinds) == 0 {
		return nil
	}
	if err := tx.q(ctx).Model(&TypeState{}).Where("environment_id = ? AND kind IN ?", envID, kinds).
		Update("generation", gorm.Expr("generation + 1")).Error; err != nil {
		return err
	}
	return tx.q(ctx).Model(&Environment{}).Where("id = ?", envID).Update("generation", gorm.Expr("generation + 1")).Error
}
