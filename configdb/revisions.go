package configdb

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/keenauth/configplans/revisions"
)

// The revisions package keeps the revisions' table; these are its
// operations in the units of work of this package.

// RecordRevision stores a revision with its encoded resources.
func (tx *Tx) RecordRevision(rev revisions.Revision, resources []byte) error {
	return revisions.Record(tx.g, rev, resources)
}

// PruneRevisions deletes the revisions of an environment past the keep
// newest or past their age; it returns how many.
func (tx *Tx) PruneRevisions(envID string, keep int) (int, error) {
	return revisions.Prune(tx.g, envID, keep, tx.Now)
}

// PruneRevisionBatch deletes up to limit revisions of an environment past
// the keep newest or past their age; it returns how many.
func (d *DB) PruneRevisionBatch(ctx context.Context, envID string, keep, limit int) (int, error) {
	n, err := revisions.PruneBatch(ctx, d.g, envID, keep, d.now(), limit)
	return n, interpretError(err)
}

// GetRevision reads a revision that is still kept (revisions.ErrNotFound).
func (d *DB) GetRevision(ctx context.Context, envID, id string, keep int) (*revisions.Revision, error) {
	rev, err := revisions.Get(ctx, d.g, envID, id, keep, d.now())
	if err != nil && !errors.Is(err, revisions.ErrNotFound) {
		err = interpretError(err)
	}
	return rev, err
}

// ListRevisions reads a page of the revisions still kept, newest first.
func (d *DB) ListRevisions(ctx context.Context, envID, before string, limit, keep int) ([]*revisions.Revision, error) {
	revs, err := revisions.List(ctx, d.g, envID, before, limit, keep, d.now())
	return revs, interpretError(err)
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
