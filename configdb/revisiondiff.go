package configdb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// LoadRevisionKindSpecs reads, in one statement that does not wait for the
// revision's own read, the version and spec now of every resource of the
// kind of revision id when the revision is of one type and holds at least
// atLeast resources (its created, updated and deleted counts), calling
// each for every one of them in the order read, with its key and spec as
// read (the driver's bytes: valid during the call only): the read a
// revision diff would make of that kind after reading the revision, made
// beside that read instead (Revisions.DiffRevision runs both at once, on
// two connections). Its answer is only the row's small columns, types and
// counts, not its resources.
//
// kind is the kind read whole, "" when the revision is not such a revision
// (or not found): then each was not called and the diff reads as before. A
// kind of no resource today comes back with no rows. The statement does
// not check that the revision is still kept or that the actor may read it:
// the caller discards the answer unless its read of the revision succeeds.
func (r Reader) LoadRevisionKindSpecs(ctx context.Context, envID, id string, atLeast int, each func(key []byte, version int, spec []byte) error) (kind string, _ error) {
	if r.sqlite {
		return r.loadRevisionKindSpecsSQLite(ctx, envID, id, atLeast, each)
	}
	// The rows are read with pgx itself, on a connection of the pool, in
	// text: its values are slices of the connection's read buffer, where
	// database/sql would make a string or a slice of every value and an
	// interface of each (six allocations a row, 6,000 for 1,000 apis).
	var eachErr error // each's, returned as it is
	err := r.withPgx(ctx, func(c *pgx.Conn) (err error) {
		var n int64
		end := statementSpan(ctx, "config_revisions", sqlRevisionKindSpecs)
		defer func() { end(n, err) }()
		rows, err := c.Query(ctx, sqlRevisionKindSpecs, pgx.QueryResultFormats{pgx.TextFormatCode}, envID, id, atLeast)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			n++
			v := rows.RawValues()
			if len(v) != 4 {
				return fmt.Errorf("configdb: %d columns, want 4", len(v))
			}
			if kind == "" {
				kind = string(v[0])
			}
			if v[1] == nil {
				continue // the kind has no resource today
			}
			version, ok := atoi(v[2])
			if !ok {
				return fmt.Errorf("configdb: a resource's version %q", v[2])
			}
			if eachErr = each(v[1], version, v[3]); eachErr != nil {
				return eachErr
			}
		}
		return rows.Err()
	})
	if eachErr != nil {
		return "", eachErr
	}
	if err != nil {
		return "", interpretError(err)
	}
	return kind, nil
}

// sqlRevisionKindSpecs is LoadRevisionKindSpecs's statement on PostgreSQL.
const sqlRevisionKindSpecs = `SELECT k.kind, r.key, r.version, r.spec FROM (SELECT types->>0 AS kind FROM config_revisions
	WHERE environment_id = $1 AND id = $2 AND jsonb_array_length(types) = 1
	AND (counts->>'created')::int + (counts->>'updated')::int + (counts->>'deleted')::int >= $3) k
	LEFT JOIN resources r ON r.environment_id = $1 AND r.kind = k.kind`

// loadRevisionKindSpecsSQLite is LoadRevisionKindSpecs on SQLite.
func (r Reader) loadRevisionKindSpecsSQLite(ctx context.Context, envID, id string, atLeast int, each func(key []byte, version int, spec []byte) error) (kind string, _ error) {
	q := `SELECT k.kind, r.key, r.version, r.spec FROM (SELECT types->>'$[0]' AS kind FROM config_revisions
		WHERE environment_id = ? AND id = ? AND json_array_length(types) = 1
		AND CAST(counts->>'$.created' AS INTEGER) + CAST(counts->>'$.updated' AS INTEGER) + CAST(counts->>'$.deleted' AS INTEGER) >= ?) k
		LEFT JOIN resources r ON r.environment_id = ? AND r.kind = k.kind`
	rows, err := r.q(ctx).Raw(q, envID, id, atLeast, envID).Rows()
	if err != nil {
		return "", interpretError(err)
	}
	defer rows.Close()
	var k, key, spec sql.RawBytes
	var version sql.NullInt64
	for rows.Next() {
		if err := rows.Scan(&k, &key, &version, &spec); err != nil {
			return "", interpretError(err)
		}
		if kind == "" {
			kind = string(k)
		}
		if key == nil {
			continue // the kind has no resource today
		}
		if err := each(key, int(version.Int64), spec); err != nil {
			return "", err
		}
	}
	if err := rows.Err(); err != nil {
		return "", interpretError(err)
	}
	return kind, nil
}

// atoi reads a non-negative decimal integer as PostgreSQL writes it.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
