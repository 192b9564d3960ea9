package plans

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"

	"github.com/keenauth/configplans/canonjson"
	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/revisions"
)

// Revisions are the reads of the revisions an apply records: one, the
// environment's list, and one beside the configuration now. Their restore
// is a plan (Service.PrepareRestore).
type Revisions struct{ core }

// GetRevision returns a revision; it needs config:read and the read
// permission of every type it holds.
func (s *Revisions) GetRevision(ctx context.Context, a Actor, id string) (*revisions.Revision, error) {
	return readRevision(ctx, s.db, s.cfg.RevisionLimit, a, id, config.PermConfigRead)
}

// readRevision returns a revision of db, which keeps limit revisions per
// environment, for a request that needs perm and the read permission of
// every type the revision holds: config:read to read it, config:write to
// restore it (the permissions of plan creation).
func readRevision(ctx context.Context, db *configdb.DB, limit int, a Actor, id, perm string) (*revisions.Revision, error) {
	if !config.ValidID(config.PrefixRevision, id) {
		return nil, &config.Error{Code: config.CodeNotFound, Detail: "no such config revision"}
	}
	rev, err := db.GetRevision(ctx, a.EnvironmentID, id, limit)
	if errors.Is(err, revisions.ErrNotFound) {
		return nil, &config.Error{Code: config.CodeNotFound, Detail: "no such config revision"}
	}
	if err != nil {
		return nil, err
	}
	kinds := make([]config.Kind, 0, len(rev.Types))
	for _, t := range rev.Types {
		kinds = append(kinds, config.Kind(t))
	}
	for _, r := range rev.Resources {
		kinds = append(kinds, config.Kind(r.Kind))
	}
	if err := a.Require(readPerms(kinds, perm)...); err != nil {
		return nil, err
	}
	return rev, nil
}

// RevisionDiff is a revision beside the configuration now (§14).
type RevisionDiff struct {
	Object     string                 `json:"object"`
	RevisionID string                 `json:"revision_id"`
	Resources  []RevisionDiffResource `json:"resources"`
}

// RevisionDiffResource is a resource of a revision: its recorded version
// and spec, those of now (nil: it no longer exists) and the diff from now
// to the recorded spec, which is what a restore would write.
type RevisionDiffResource struct {
	Kind          string          `json:"kind"`
	Key           string          `json:"key"`
	VersionBefore *int            `json:"version_before"`
	VersionNow    *int            `json:"version_now"`
	SpecBefore    json.RawMessage `json:"spec_before"`
	SpecNow       json.RawMessage `json:"spec_now"`
	Diff          []config.DiffOp `json:"diff"`
}

// wholeKindAt is how many resources of one kind a revision holds for its
// diff to read the whole kind instead of each key.
const wholeKindAt = 200

// DiffRevision compares every resource of a revision with its state now,
// in the order of the revision. It needs the permissions of GetRevision and
// writes nothing.
func (s *Revisions) DiffRevision(ctx context.Context, a Actor, id string) (*RevisionDiff, error) {
	rev, whole, wholeRows, err := s.readForDiff(ctx, a, id)
	if err != nil {
		return nil, err
	}
	// A kind of which the revision holds many resources is read whole, in
	// one query, like an export; the others by key. Only the version and
	// the spec of each are read. The kind readForDiff read whole already
	// is not read again.
	var kinds []string
	var keys [][2]string
	perKind := map[string]int{}
	for _, r := range rev.Resources {
		if r.Kind != whole {
			perKind[r.Kind]++
		}
	}
	for k, n := range perKind {
		if n >= wholeKindAt {
			kinds = append(kinds, k)
		}
	}
	for _, r := range rev.Resources {
		if r.Kind != whole && perKind[r.Kind] < wholeKindAt {
			keys = append(keys, [2]string{r.Kind, r.Key})
		}
	}
	slices.Sort(kinds)
	now := state{}
	now.add(wholeRows, false) // canonical already (readForDiff)
	if len(keys)+len(kinds) > 0 {
		rows, err := s.db.LoadSpecs(ctx, a.EnvironmentID, kinds, keys)
		if err != nil {
			return nil, err
		}
		if err := canonicalSpecs(rows); err != nil {
			return nil, err
		}
		now.add(rows, false)
	}
	versions := make([]int, len(rev.Resources))
	// The operations of every resource are parts of one list (most
	// resources of a large revision have one or two).
	ops := make([]config.DiffOp, 0, len(rev.Resources))
	out := &RevisionDiff{Object: "config_revision_diff", RevisionID: rev.ID, Resources: make([]RevisionDiffResource, 0, len(rev.Resources))}
	for i, r := range rev.Resources {
		// A revision's specs are canonical as revisions.Get reads them
		// (it makes those of older rows so); today's were made so by
		// canonicalSpecs (nil for none).
		d := RevisionDiffResource{Kind: r.Kind, Key: r.Key, VersionBefore: r.VersionBefore}
		if len(r.SpecBefore) > 0 && string(r.SpecBefore) != "null" {
			d.SpecBefore = r.SpecBefore
		}
		if cur := now.get(config.Kind(r.Kind), r.Key); cur != nil {
			versions[i] = cur.Version
			d.VersionNow = &versions[i]
			d.SpecNow = json.RawMessage(cur.Spec)
		}
		start := len(ops)
		ops = config.AppendDiffCanonical(ops, d.SpecNow, d.SpecBefore)
		d.Diff = ops[start:len(ops):len(ops)]
		out.Resources = append(out.Resources, d)
	}
	return out, nil
}

// revisionSpec is a spec of a revision diff in canonical form (as
// canonicalForDiff makes it), nil for none, appended to arena unless it is
// canonical already; bytes that are not JSON are an error, as they were
// when the answer was encoded by encoding/json.
func revisionSpec(arena, raw []byte) (_ []byte, spec json.RawMessage, _ error) {
	var canon canonjson.Appender
	return appendRevisionSpec(&canon, arena, raw)
}

// appendRevisionSpec is revisionSpec with canon's scratch space.
func appendRevisionSpec(canon *canonjson.Appender, arena, raw []byte) (_ []byte, spec json.RawMessage, _ error) {
	switch {
	case canonjson.IsCanonical(raw):
		spec = raw[:len(raw):len(raw)]
	case len(bytes.TrimSpace(raw)) == 0:
		return arena, nil, nil
	default:
		start := len(arena)
		out, ok := canon.Append(arena, raw)
		if !ok {
			// Nested too deep for the scan, or not JSON.
			if spec, ok = config.CanonicalForDiff(raw); !ok {
				return arena, nil, errors.New("revision diff: a spec is not JSON")
			}
			return arena, spec, nil
		}
		arena, spec = out, out[start:len(out):len(out)]
	}
	if string(spec) == "null" {
		return arena, nil, nil
	}
	return arena, spec, nil
}

// AppendJSON appends the JSON of the diff: what encoding/json writes for
// it, without HTML escaping, with the specs and the operations' values
// copied as they are (canonical already: see DiffRevision).
func (d *RevisionDiff) AppendJSON(b []byte) []byte {
	b = slices.Grow(b, d.AnswerSizeHint())
	b = d.appendHead(b)
	if d.Resources == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range d.Resources {
			if i > 0 {
				b = append(b, ',')
			}
			b = d.Resources[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// WriteJSON writes what AppendJSON appends to w, a resource at a time, in
// buffers of about 64 KiB: the diff of a large revision (twice its specs
// and their diffs) is answered without a copy of it all.
func (d *RevisionDiff) WriteJSON(w io.Writer) error {
	b := d.appendHead(make([]byte, 0, flushAt+4<<10))
	b, err := writeList(w, b, d.Resources, func(b []byte, r *RevisionDiffResource) []byte { return r.appendJSON(b) })
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '}'))
	return err
}

// AnswerSizeHint is about the size of the diff's JSON: what service
// streams rather than holds (WriteJSON) is decided by it.
func (d *RevisionDiff) AnswerSizeHint() int {
	size := 100
	for _, r := range d.Resources {
		size += 120 + len(r.Kind) + len(r.Key) + len(r.SpecBefore) + len(r.SpecNow)
		for _, op := range r.Diff {
			size += 40 + len(op.Path) + len(op.Old) + len(op.Value)
		}
	}
	return size
}

// appendHead appends the diff's members before its resources' value, up
// to and with `"resources":`.
func (d *RevisionDiff) appendHead(b []byte) []byte {
	b = append(b, `{"object":`...)
	b = canonjson.AppendString(b, d.Object)
	b = append(b, `,"revision_id":`...)
	b = canonjson.AppendString(b, d.RevisionID)
	return append(b, `,"resources":`...)
}

func (r *RevisionDiffResource) appendJSON(b []byte) []byte {
	b = append(b, `{"kind":`...)
	b = canonjson.AppendString(b, r.Kind)
	b = append(b, `,"key":`...)
	b = canonjson.AppendString(b, r.Key)
	b = append(b, `,"version_before":`...)
	b = appendIntPtr(b, r.VersionBefore)
	b = append(b, `,"version_now":`...)
	b = appendIntPtr(b, r.VersionNow)
	b = append(b, `,"spec_before":`...)
	b = canonjson.AppendRaw(b, r.SpecBefore)
	b = append(b, `,"spec_now":`...)
	b = canonjson.AppendRaw(b, r.SpecNow)
	b = append(b, `,"diff":`...)
	if r.Diff == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, op := range r.Diff {
			if i > 0 {
				b = append(b, ',')
			}
			b = config.AppendDiffOp(b, op)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// ListRevisions lists the revisions of the actor's environment, newest first.
func (s *Revisions) ListRevisions(ctx context.Context, a Actor, lp ListParams) (Page[*revisions.Revision], error) {
	if err := a.Require(config.PermConfigRead); err != nil {
		return Page[*revisions.Revision]{}, err
	}
	revs, err := s.db.ListRevisions(ctx, a.EnvironmentID, lp.Cursor, lp.Limit, s.cfg.RevisionLimit)
	if err != nil {
		return Page[*revisions.Revision]{}, err
	}
	return page(revs, lp.Limit, func(r *revisions.Revision) string { return r.ID }), nil
}
