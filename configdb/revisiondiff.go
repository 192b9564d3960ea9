package configdb

import (
	"context"
	"database/sql"
)

// LoadRevisionKindSpecs reads, in one statement that does not wait for the
// revision's own read, the version and spec now of every resource of the
// kind of revision id when the revision is of one type and holds at least
// atLeast resources (its created, updated and deleted counts): the read a
// revision diff would make of that kind after reading the revision, made
// beside that read instead (Revisions.DiffRevision runs both at once, on
// two connections). Its answer is only the row's small columns, types and
// counts, not its resources.
//
// kind is the kind read whole, "" when the revision is not such a revision
// (or not found): then nothing was read and the diff reads as before. A
// kind of no resource today comes back with no rows. The statement does
// not check that the revision is still kept or that the actor may read it:
// the caller discards the answer unless its read of the revision succeeds.
func (r Reader) LoadRevisionKindSpecs(ctx context.Context, envID, id string, atLeast int) (kind string, _ []Resource, _ error) {
	// The revision's row is a subquery of one row at most; a LEFT JOIN
	// gives the kind even when no resource of it exists today (key NULL).
	q := `SELECT k.kind, r.key, r.version, r.spec FROM (SELECT types->>0 AS kind FROM config_revisions
		WHERE environment_id = ? AND id = ? AND jsonb_array_length(types) = 1
		AND (counts->>'created')::int + (counts->>'updated')::int + (counts->>'deleted')::int >= ?) k
		LEFT JOIN resources r ON r.environment_id = ? AND r.kind = k.kind`
	if r.sqlite {
		q = `SELECT k.kind, r.key, r.version, r.spec FROM (SELECT types->>'$[0]' AS kind FROM config_revisions
		WHERE environment_id = ? AND id = ? AND json_array_length(types) = 1
		AND CAST(counts->>'$.created' AS INTEGER) + CAST(counts->>'$.updated' AS INTEGER) + CAST(counts->>'$.deleted' AS INTEGER) >= ?) k
		LEFT JOIN resources r ON r.environment_id = ? AND r.kind = k.kind`
	}
	rows, err := r.q(ctx).Raw(q, envID, id, atLeast, envID).Rows()
	if err != nil {
		return "", nil, interpretError(err)
	}
	defer rows.Close()
	var out []Resource
	var k, key sql.RawBytes
	var version sql.NullInt64
	for rows.Next() {
		var res Resource
		if err := rows.Scan(&k, &key, &version, &res.Spec); err != nil {
			return "", nil, interpretError(err)
		}
		if kind == "" {
			kind = string(k)
		}
		if key == nil {
			continue // the kind has no resource today
		}
		res.Kind, res.Key, res.Version = kind, string(key), int(version.Int64)
		out = append(out, res)
	}
	if err := rows.Err(); err != nil {
		return "", nil, interpretError(err)
	}
	return kind, out, nil
}
