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
		var rd kindReader
		ks.kind, ks.err = s.db.LoadRevisionKindSpecs(sideCtx, a.EnvironmentID, id, wholeKindAt, rd.add)
		ks.rows = rd.resources(ks.kind)
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

// kindReader keeps the resources LoadRevisionKindSpecs reads, their specs
// made canonical as canonicalSpecs makes them: the specs are appended to
// chunks of arenaChunk bytes and the keys to one buffer, which becomes one
// string, so that a resource read costs no allocation of its own.
type kindReader struct {
	canon canonjson.Appender
	arena []byte
	keys  []byte
	rows  []configdb.Resource
	ends  []int // where each row's key ends in keys
}

// arenaChunk is the size of a chunk of kindReader's specs: a resource's
// spec is read into the chunk's free space, or a new chunk.
const arenaChunk = 256 << 10

// add keeps a resource; its bytes are the driver's, copied.
func (k *kindReader) add(key []byte, version int, raw []byte) error {
	if cap(k.arena)-len(k.arena) < len(raw) {
		k.arena = make([]byte, 0, max(arenaChunk, len(raw)))
	}
	var spec json.RawMessage
	var err error
	if k.arena, spec, err = appendCanonicalCopy(&k.canon, k.arena, raw); err != nil {
		return err
	}
	k.keys = append(k.keys, key...)
	k.ends = append(k.ends, len(k.keys))
	k.rows = append(k.rows, configdb.Resource{Version: version, Spec: configdb.JSON(spec)})
	return nil
}

// resources are the resources kept, of kind.
func (k *kindReader) resources(kind string) []configdb.Resource {
	keys, start := string(k.keys), 0
	for i := range k.rows {
		k.rows[i].Kind, k.rows[i].Key = kind, keys[start:k.ends[i]]
		start = k.ends[i]
	}
	return k.rows
}

// appendCanonicalCopy is appendRevisionSpec for bytes that are not kept
// (the driver's): the spec is always a slice of the arena.
func appendCanonicalCopy(canon *canonjson.Appender, arena, raw []byte) (_ []byte, spec json.RawMessage, _ error) {
	start := len(arena)
	arena, spec, err := appendRevisionSpec(canon, arena, raw)
	if err != nil || spec == nil {
		return arena[:start], nil, err
	}
	if len(arena) == start { // spec is raw, or made apart from the arena
		arena = append(arena, spec...)
		spec = arena[start:len(arena):len(arena)]
	}
	return arena, spec, nil
}
