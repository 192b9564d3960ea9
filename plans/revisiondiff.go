package plans

import (
	"context"
	"encoding/json"

	"github.com/keenauth/configplans/canonjson"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/revisions"
)

// readForDiff reads a revision (as GetRevision does, with its permissions)
// and, at the same time on a second connection, today's resources of its
// kind when the revision is of one type and holds at least wholeKindAt
// resources: the kind the diff would otherwise read whole once the
// revision was read and decoded (configdb.LoadRevisionKindSpecs). whole is
// that kind, "" when nothing was read beside the revision; rows are its
// resources.
//
// The diff of a large revision is then one wait for the database instead
// of two in a row: the resources are read, and made canonical
// (canonicalSpecs), while the revision's row is read, sent and decoded.
// The rows are dropped unread when the revision is not found or the actor
// may not read it.
func (s *Revisions) readForDiff(ctx context.Context, a Actor, id string) (rev *revisions.Revision, whole string, rows []configdb.Resource, err error) {
	if !config.ValidID(config.PrefixRevision, id) {
		return nil, "", nil, &config.Error{Code: config.CodeNotFound, Detail: "no such config revision"}
	}
	type kindSpecs struct {
		kind string
		rows []configdb.Resource
		err  error
	}
	sideCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	side := make(chan kindSpecs, 1)
	go func() {
		var ks kindSpecs
		ks.kind, ks.rows, ks.err = s.db.LoadRevisionKindSpecs(sideCtx, a.EnvironmentID, id, wholeKindAt)
		if ks.err == nil {
			ks.err = canonicalSpecs(ks.rows)
		}
		side <- ks
	}()
	rev, err = s.GetRevision(ctx, a, id)
	if err != nil {
		cancel()
		<-side // the read ends with the request
		return nil, "", nil, err
	}
	ks := <-side
	if ks.err != nil {
		return nil, "", nil, ks.err
	}
	return rev, ks.kind, ks.rows, nil
}

// canonicalSpecs makes the specs of rows canonical in place, as the diff
// answers them (see revisionSpec): nil for none. They are appended to one
// buffer, of which each is a slice (canonical JSON is no longer than
// jsonb's, which spaces it), not an allocation for each.
func canonicalSpecs(rows []configdb.Resource) error {
	size := 0
	for i := range rows {
		size += len(rows[i].Spec)
	}
	arena := make([]byte, 0, size)
	var canon canonjson.Appender
	for i := range rows {
		var spec json.RawMessage
		var err error
		if arena, spec, err = appendRevisionSpec(&canon, arena, rows[i].Spec); err != nil {
			return err
		}
		rows[i].Spec = configdb.JSON(spec)
	}
	return nil
}
