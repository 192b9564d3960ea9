package configdb

import (
	"context"
	"errors"

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
