package plans

import (
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/keenauth/configplans/canonjson"
	"github.com/keenauth/configplans/config"
)

// The plan's JSON is written by hand: encoding/json validates and compacts
// every json.RawMessage again (a 1,000-change plan holds each spec twice,
// in the change and in its diff), and a plan answer was about a quarter of
// an apply's CPU. The specs and diff values are spliced as they are: they
// are canonical JSON already (canonical, or decoded and checked by
// decodeChangeRecords). Members come in the order of the struct tags, as
// encoding/json writes them; <, > and & are left as they are, as marshal
// leaves them (the values are the same JSON).

// AppendJSON appends the plan as JSON, as json.Marshal writes it.
func (p *Plan) AppendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	return p.appendJSON(b, false)
}

// AppendJSON appends the preview as MarshalJSON writes it: id, expires_at
// and created_by null, the last two after the other members.
func (p PlanPreview) AppendJSON(b []byte) []byte {
	if p.Plan == nil {
		return append(b, `{"id":null,"expires_at":null,"created_by":null,"created_by_owner":null}`...)
	}
	return p.appendJSON(b, true)
}

// PlanPage is a page of plans, which appends its JSON by hand.
type PlanPage Page[*Plan]

// AppendJSON appends the page as json.Marshal writes it.
func (pg PlanPage) AppendJSON(b []byte) []byte {
	b = append(b, `{"data":`...)
	if pg.Data == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range pg.Data {
			if i > 0 {
				b = append(b, ',')
			}
			b = p.AppendJSON(b)
		}
		b = append(b, ']')
	}
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, pg.HasMore)
	b = append(b, `,"next_cursor":`...)
	b = appendStringPtr(b, pg.NextCursor)
	return append(b, '}')
}

func (p *Plan) appendJSON(b []byte, preview bool) []byte {
	b = slices.Grow(b, p.sizeHint())
	b = p.appendHead(b, preview)
	if kept, ok := p.changesJSON.of(p.Changes); ok {
		b = append(b, kept...)
	} else {
		b = appendChanges(b, p.Changes, false)
	}
	return p.appendTail(b, preview)
}

// WriteJSON writes what AppendJSON appends to w, a change at a time, in
// buffers of about 64 KiB: a plan of 10 MiB of changes is answered without
// a copy of them all. Kept changes (see keepChangesJSON) are written as
// they are.
func (p *Plan) WriteJSON(w io.Writer) error {
	if p == nil {
		_, err := io.WriteString(w, "null")
		return err
	}
	b := p.appendHead(make([]byte, 0, flushAt+4<<10), false)
	kept, ok := p.changesJSON.of(p.Changes)
	switch {
	case ok:
		if _, err := w.Write(b); err != nil {
			return err
		}
		if _, err := w.Write(kept); err != nil {
			return err
		}
		b = b[:0]
	default:
		var err error
		if b, err = writeList(w, b, p.Changes, func(b []byte, c *Change) []byte { return c.appendJSON(b, false) }); err != nil {
			return err
		}
	}
	_, err := w.Write(p.appendTail(b, false))
	return err
}

// flushAt is the size at which WriteJSON's buffer goes to the writer.
const flushAt = 64 << 10

// writeList appends items' JSON array to b (null for a nil slice), writing
// b to w and starting it again each time it reaches flushAt. It returns
// what is left of b to write.
func writeList[T any](w io.Writer, b []byte, items []T, appendOne func([]byte, *T) []byte) ([]byte, error) {
	if items == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendOne(b, &items[i])
		if len(b) >= flushAt {
			if _, err := w.Write(b); err != nil {
				return nil, err
			}
			b = b[:0]
		}
	}
	return append(b, ']'), nil
}

// appendHead appends the plan's members before its changes' value, up to
// and with `"changes":`.
func (p *Plan) appendHead(b []byte, preview bool) []byte {
	if preview {
		b = append(b, `{"id":null`...)
	} else {
		b = append(b, `{"id":`...)
		b = canonjson.AppendString(b, p.ID)
	}
	b = append(b, `,"object":`...)
	b = canonjson.AppendString(b, p.Object)
	b = append(b, `,"environment_id":`...)
	b = canonjson.AppendString(b, p.EnvironmentID)
	b = append(b, `,"status":`...)
	b = canonjson.AppendString(b, string(p.Status))
	b = append(b, `,"prune":`...)
	b = strconv.AppendBool(b, p.Prune)
	b = append(b, `,"types":`...)
	b = appendKinds(b, p.Types)
	b = append(b, `,"referencing_types":`...)
	b = appendKinds(b, p.ReferencingTypes)
	b = append(b, `,"changes":`...)
	return b
}

// appendTail appends the plan's members after its changes, to its end.
func (p *Plan) appendTail(b []byte, preview bool) []byte {
	b = append(b, `,"warnings":`...)
	b = appendWarnings(b, p.Warnings)
	b = append(b, `,"required_secrets":`...)
	b = appendStrings(b, p.RequiredSecrets)
	b = append(b, `,"requires_sp_host":`...)
	b = strconv.AppendBool(b, p.RequiresSPHost)
	b = append(b, `,"summary":`...)
	b = p.Summary.appendJSON(b)
	b = append(b, `,"created_at":`...)
	b = p.CreatedAt.appendJSON(b)
	if !preview {
		b = append(b, `,"expires_at":`...)
		b = p.ExpiresAt.appendJSON(b)
	}
	b = append(b, `,"applied_at":`...)
	if p.AppliedAt == nil {
		b = append(b, "null"...)
	} else {
		b = p.AppliedAt.appendJSON(b)
	}
	b = append(b, `,"revision_id":`...)
	b = appendStringPtr(b, p.RevisionID)
	if !preview {
		b = append(b, `,"created_by":`...)
		b = canonjson.AppendString(b, p.CreatedBy)
		b = append(b, `,"created_by_owner":`...)
		b = appendStringPtr(b, p.CreatedByOwner)
	}
	b = append(b, `,"rebased_from":`...)
	b = appendStringPtr(b, p.RebasedFrom)
	b = append(b, `,"moved":`...)
	b = p.Moved.appendJSON(b)
	b = p.appendReviewJSON(b)
	if preview {
		b = append(b, `,"expires_at":null,"created_by":null,"created_by_owner":null`...)
	}
	return append(b, '}')
}

// AnswerSizeHint is about the size of the plan's JSON answer: what
// service streams rather than holds (WriteJSON) is decided by it.
func (p *Plan) AnswerSizeHint() int { return p.sizeHint() }

// sizeHint is about the size of the plan's JSON, so that it is appended
// without growing the buffer again and again.
func (p *Plan) sizeHint() int {
	n := 1024 + 256*len(p.Warnings)
	for i := range p.Changes {
		n += p.Changes[i].sizeHint()
	}
	for i := range p.Moved {
		n += 128 + diffSizeHint(p.Moved[i].Diff)
	}
	return n
}

func (c *Change) sizeHint() int {
	return 192 + len(c.Key) + len(c.Spec) + diffSizeHint(c.Diff)
}

func diffSizeHint(ops []config.DiffOp) int {
	n := 0
	for i := range ops {
		n += 48 + len(ops[i].Path) + len(ops[i].Old) + len(ops[i].Value)
	}
	return n
}

// changesJSON is the JSON of a plan's changes, appended once: plan creation
// stores the changes and answers them, and both are the same bytes when no
// change writes or keeps OIDC material (the only members a record adds).
// It holds for the slice it was appended from (its first element and its
// length): a plan copied with other changes appends its own.
type changesJSON struct {
	json  []byte
	first *Change
	n     int
}

// keepChangesJSON keeps records, the stored changes of p as
// appendChangeRecords appended them, for the answer, when they are its
// changes as the answer shows them.
func (p *Plan) keepChangesJSON(records []byte) {
	p.changesJSON = changesJSON{}
	if len(p.Changes) == 0 {
		return
	}
	for i := range p.Changes {
		if p.Changes[i].WritesMaterial || p.Changes[i].KeepsMaterial {
			return
		}
	}
	p.changesJSON = changesJSON{json: records, first: &p.Changes[0], n: len(p.Changes)}
}

// of returns the JSON kept, if it was appended from cs.
func (c changesJSON) of(cs []Change) ([]byte, bool) {
	if c.json == nil || len(cs) != c.n || &cs[0] != c.first {
		return nil, false
	}
	return c.json, true
}

// appendChangeRecords appends the changes as they are stored: the records
// with their internal members (changeRecord), as marshal writes them.
func appendChangeRecords(b []byte, cs []Change) []byte {
	if cs == nil {
		// a plan without changes stores [], never null.
		return append(b, "[]"...)
	}
	n := 2
	for i := range cs {
		n += cs[i].sizeHint()
	}
	return appendChanges(slices.Grow(b, n), cs, true)
}

// appendChanges appends the changes as a plan shows them, or as they are
// stored (records: with writes_material and keeps_material).
func appendChanges(b []byte, cs []Change, records bool) []byte {
	if cs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		b = cs[i].appendJSON(b, records)
	}
	return append(b, ']')
}

func (c *Change) appendJSON(b []byte, record bool) []byte {
	b = append(b, `{"kind":`...)
	b = canonjson.AppendString(b, string(c.Kind))
	b = append(b, `,"key":`...)
	b = canonjson.AppendString(b, c.Key)
	b = append(b, `,"action":`...)
	b = canonjson.AppendString(b, string(c.Action))
	b = append(b, `,"base_version":`...)
	b = appendIntPtr(b, c.BaseVersion)
	b = append(b, `,"spec":`...)
	b = canonjson.AppendRaw(b, c.Spec)
	b = append(b, `,"diff":`...)
	b = appendDiff(b, c.Diff)
	b = append(b, `,"requires_secret":`...)
	b = strconv.AppendBool(b, c.RequiresSecret)
	if c.SecretRef != "" {
		b = append(b, `,"secret_ref":`...)
		b = canonjson.AppendString(b, c.SecretRef)
	}
	if len(c.ResourceID) > 0 {
		b = append(b, `,"resource_id":`...)
		b = append(b, c.ResourceID...)
	}
	if record {
		if c.WritesMaterial {
			b = append(b, `,"writes_material":true`...)
		}
		if c.KeepsMaterial {
			b = append(b, `,"keeps_material":true`...)
		}
	}
	return append(b, '}')
}

// appendDiff appends the operations as DiffOp.MarshalJSON writes each.
func appendDiff(b []byte, ops []config.DiffOp) []byte {
	if ops == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range ops {
		if i > 0 {
			b = append(b, ',')
		}
		b = config.AppendDiffOp(b, ops[i])
	}
	return append(b, ']')
}

func (l MovedList) appendJSON(b []byte) []byte {
	if len(l) == 0 {
		return append(b, "[]"...)
	}
	b = append(b, '[')
	for i := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = l[i].appendJSON(b)
	}
	return append(b, ']')
}

// appendJSON mirrors Moved.MarshalJSON.
func (m *Moved) appendJSON(b []byte) []byte {
	b = append(b, `{"kind":`...)
	b = canonjson.AppendString(b, string(m.Kind))
	if m.Key == nil {
		b = append(b, `,"key":null,"code":`...)
		b = canonjson.AppendString(b, string(m.Code))
		return append(b, '}')
	}
	b = append(b, `,"key":`...)
	b = canonjson.AppendString(b, *m.Key)
	b = append(b, `,"version_then":`...)
	b = appendIntPtr(b, m.VersionThen)
	b = append(b, `,"version_now":`...)
	b = appendIntPtr(b, m.VersionNow)
	b = append(b, `,"diff":`...)
	if m.Diff == nil {
		b = append(b, "[]"...)
	} else {
		b = appendDiff(b, m.Diff)
	}
	return append(b, '}')
}

func appendWarnings(b []byte, ws []Warning) []byte {
	if ws == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, w := range ws {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"code":`...)
		b = canonjson.AppendString(b, string(w.Code))
		b = append(b, `,"target":`...)
		b = canonjson.AppendString(b, w.Target)
		b = append(b, `,"pointer":`...)
		b = canonjson.AppendString(b, w.Pointer)
		b = append(b, `,"detail":`...)
		b = canonjson.AppendString(b, w.Detail)
		if w.Rule != "" {
			b = append(b, `,"rule":`...)
			b = canonjson.AppendString(b, w.Rule)
		}
		if w.Approvals != 0 {
			b = append(b, `,"approvals":`...)
			b = strconv.AppendInt(b, int64(w.Approvals), 10)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func (s Summary) appendJSON(b []byte) []byte {
	b = append(b, `{"create":`...)
	b = strconv.AppendInt(b, int64(s.Create), 10)
	b = append(b, `,"update":`...)
	b = strconv.AppendInt(b, int64(s.Update), 10)
	b = append(b, `,"delete":`...)
	b = strconv.AppendInt(b, int64(s.Delete), 10)
	b = append(b, `,"no_op":`...)
	b = strconv.AppendInt(b, int64(s.NoOp), 10)
	return append(b, '}')
}

// appendJSON appends the time as MarshalJSON writes it.
func (t Time) appendJSON(b []byte) []byte {
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	return append(b, '"')
}

func appendKinds(b []byte, ks []config.Kind) []byte {
	if ks == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, k := range ks {
		if i > 0 {
			b = append(b, ',')
		}
		b = canonjson.AppendString(b, string(k))
	}
	return append(b, ']')
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = canonjson.AppendString(b, s)
	}
	return append(b, ']')
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return canonjson.AppendString(b, *s)
}

func appendIntPtr(b []byte, n *int) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(*n), 10)
}
