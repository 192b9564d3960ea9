package configdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/keenauth/configplans/revisions"
	"gorm.io/gorm"
)

// config_revisions is this package's alone: the revisions package holds a
// revision's types and the encoding of its resources.

// revisionRow is a row of config_revisions.
type revisionRow struct {
	EnvironmentID string `gorm:"primaryKey"`
	ID            string `gorm:"primaryKey"`
	PlanID        string
	Types         []byte `gorm:"type:jsonb"`
	Counts        []byte `gorm:"type:jsonb"`
	Resources     []byte `gorm:"type:json"`
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

func (revisionRow) TableName() string { return "config_revisions" }

// RecordRevision stores a revision with its encoded resources (the output
// of revisions.Encode).
func (tx *Tx) RecordRevision(rev revisions.Revision, resources []byte) error {
	types, _ := json.Marshal(rev.Types)
	counts, _ := json.Marshal(rev.Counts)
	return tx.g.Create(&revisionRow{EnvironmentID: rev.EnvironmentID, ID: rev.ID, PlanID: rev.PlanID, Types: types, Counts: counts,
		Resources: resources, CreatedAt: rev.CreatedAt, ExpiresAt: rev.ExpiresAt}).Error
}

// PruneRevisions deletes the revisions of an environment past the keep
// newest or past their age; it returns how many.
func (tx *Tx) PruneRevisions(envID string, keep int) (int, error) {
	noLimit := "" // SQLite has no OFFSET without a LIMIT, and spells "no limit" -1
	if tx.sqlite {
		noLimit = "LIMIT -1 "
	}
	res := tx.g.Exec(`DELETE FROM config_revisions WHERE environment_id = ? AND (expires_at <= ? OR id IN (
		SELECT id FROM config_revisions WHERE environment_id = ? ORDER BY id DESC `+noLimit+`OFFSET ?))`, envID, tx.Now, envID, keep)
	return int(res.RowsAffected), res.Error
}

// PruneRevisionBatch deletes up to limit revisions of an environment past
// the keep newest or past their age; it returns how many. Every statement
// names the environment, so each runs on one shard when the tables are
// distributed by environment_id.
func (d *DB) PruneRevisionBatch(ctx context.Context, envID string, keep, limit int) (int, error) {
	var ids []string
	err := d.q(ctx).Raw(`SELECT id FROM config_revisions WHERE environment_id = ? AND (expires_at <= ? OR id < COALESCE(
		(SELECT id FROM config_revisions WHERE environment_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?), ''))
		ORDER BY id LIMIT ?`, envID, d.now(), envID, keep-1, limit).Scan(&ids).Error
	if err != nil || len(ids) == 0 {
		return 0, interpretError(err)
	}
	res := d.q(ctx).Exec(`DELETE FROM config_revisions WHERE environment_id = ? AND id IN ?`, envID, ids)
	return int(res.RowsAffected), interpretError(res.Error)
}

// visibleRevisions is the condition of a revision that may be returned:
// unexpired and among the keep most recent of its environment.
func visibleRevisions(q *gorm.DB, envID string, keep int, now time.Time) *gorm.DB {
	return q.Where("environment_id = ? AND expires_at > ? AND id >= COALESCE((SELECT id FROM config_revisions WHERE environment_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?), '')",
		envID, now, envID, keep-1)
}

// GetRevision reads a revision that is still kept (revisions.ErrNotFound).
//
// On PostgreSQL the row is read with pgx itself (withPgx): through GORM and
// database/sql, a revision's resources (up to 10 MiB) were copied twice,
// once by the driver and once by database/sql, and every column set by
// reflection; pgx copies them once, into the slice they are decoded from.
func (d *DB) GetRevision(ctx context.Context, envID, id string, keep int) (*revisions.Revision, error) {
	var r revisionRow
	var err error
	if d.sqlite {
		err = visibleRevisions(d.q(ctx), envID, keep, d.now()).Where("id = ?", id).Take(&r).Error
	} else {
		err = d.withPgx(ctx, func(c *pgx.Conn) (err error) {
			end := statementSpan(ctx, "config_revisions", sqlGetRevision)
			defer func() {
				n := int64(1)
				if err != nil {
					n = 0
				}
				end(n, err)
			}()
			return c.QueryRow(ctx, sqlGetRevision, envID, id, d.now(), keep-1).
				Scan(&r.EnvironmentID, &r.ID, &r.PlanID, &r.Types, &r.Counts, &r.Resources, &r.CreatedAt, &r.ExpiresAt)
		})
	}
	if errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, sql.ErrNoRows) {
		return nil, revisions.ErrNotFound
	}
	if err != nil {
		return nil, interpretError(err)
	}
	return decodeRevision(r, true)
}

// sqlGetRevision is GetRevision's statement on PostgreSQL: a revision by
// its id among those visibleRevisions returns.
const sqlGetRevision = `SELECT environment_id, id, plan_id, types, counts, resources, created_at, expires_at FROM config_revisions
	WHERE environment_id = $1 AND id = $2 AND expires_at > $3
	AND id >= COALESCE((SELECT id FROM config_revisions WHERE environment_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $4), '')`

// ListRevisions reads a page of the revisions still kept, newest first,
// without their resources: up to limit+1 older than before (when set).
func (d *DB) ListRevisions(ctx context.Context, envID, before string, limit, keep int) ([]*revisions.Revision, error) {
	q := visibleRevisions(d.q(ctx).Omit("resources"), envID, keep, d.now())
	if before != "" {
		q = q.Where("id < ?", before)
	}
	var rows []revisionRow
	if err := q.Order("id DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	out := make([]*revisions.Revision, 0, len(rows))
	for _, r := range rows {
		rev, err := decodeRevision(r, false)
		if err != nil {
			return nil, interpretError(err)
		}
		out = append(out, rev)
	}
	return out, nil
}

func decodeRevision(r revisionRow, withResources bool) (*revisions.Revision, error) {
	rev := &revisions.Revision{EnvironmentID: r.EnvironmentID, ID: r.ID, PlanID: r.PlanID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
	if err := json.Unmarshal(r.Types, &rev.Types); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(r.Counts, &rev.Counts); err != nil {
		return nil, err
	}
	if withResources {
		rs, err := revisions.DecodeResources(r.Resources)
		if err != nil {
			return nil, err
		}
		rev.Resources = rs
	}
	return rev, nil
}

// LoadSpecs reads the version and spec now of the resources of whole kinds
// and of single [kind, key] pairs, for a revision diff: only those four
// columns, set in the Resources it returns (the others are zero). A
// resource named twice is read twice; the caller keeps one.
//
// The rows are scanned by hand, not by GORM's Find: Find sets every column
// of a whole row by reflection and parses its two timestamps, which was
// most of the read of a 1,000-resource revision's diff. Here a row's kind
// is the string of the row before when it is the same. (Copying the specs
// into one growing buffer instead of one copy each allocated more bytes,
// for the buffer's growth, and was no faster.)
func (r Reader) LoadSpecs(ctx context.Context, envID string, kinds []string, keys [][2]string) ([]Resource, error) {
	const cols = "SELECT kind, key, version, spec FROM resources WHERE environment_id = ? AND "
	var out []Resource
	var parts []string
	var args []any
	params := 0
	flush := func() error {
		if len(parts) == 0 {
			return nil
		}
		var err error
		out, err = r.scanSpecs(ctx, strings.Join(parts, " UNION ALL "), args, out)
		parts, args, params = nil, nil, 0
		return interpretError(err)
	}
	// add adds a part of n+1 parameters: one statement, one round trip,
	// unless the parts name more than maxQueryArgs.
	add := func(cond string, n int, a any) error {
		if params+n+1 > maxQueryArgs {
			if err := flush(); err != nil {
				return err
			}
		}
		parts = append(parts, cols+cond)
		args = append(args, envID, a)
		params += n + 1
		return nil
	}
	for _, k := range kinds {
		if err := add("kind = ?", 1, k); err != nil {
			return nil, err
		}
	}
	for len(keys) > 0 {
		batch := keys[:min(len(keys), loadBatch)]
		keys = keys[len(batch):]
		pairs := make([][]any, len(batch))
		for i, p := range batch {
			pairs[i] = []any{p[0], p[1]}
		}
		if err := add("(kind, key) IN ?", 2*len(batch), pairs); err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// scanSpecs runs a query of kind, key, version and spec and appends its
// rows to out.
func (r Reader) scanSpecs(ctx context.Context, query string, args []any, out []Resource) ([]Resource, error) {
	rows, err := r.q(ctx).Raw(query, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	first := len(out)
	var kind, key sql.RawBytes
	var version int
	for rows.Next() {
		var res Resource
		if err := rows.Scan(&kind, &key, &version, &res.Spec); err != nil {
			return nil, err
		}
		res.Key, res.Version = string(key), version
		if n := len(out); n > first && out[n-1].Kind == string(kind) {
			res.Kind = out[n-1].Kind
		} else {
			res.Kind = string(kind)
		}
		out = append(out, res)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
