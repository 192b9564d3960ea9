// Package revisions is a revision's types and encoding: the configuration
// of the resources an apply changed, as it was before the apply. Its table,
// config_revisions (the 50 most recent per environment, none older than 90
// days), is written and read by configdb alone.
package revisions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/keenauth/configplans/canonjson"
)

// ErrNotFound: no such revision in the environment (or it was pruned).
var ErrNotFound = errors.New("revision not found")

// Counts are the resources of an apply by outcome.
type Counts struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Deleted   int `json:"deleted"`
	Unchanged int `json:"unchanged"`
}

// Resource is the configuration of one resource before the apply.
type Resource struct {
	Kind          string `json:"kind"`
	Key           string `json:"key"`
	Action        string `json:"action"`
	VersionBefore *int   `json:"version_before"`
	// SpecBefore is canonical (plans/canonjson) as Get reads it, JSON
	// null for a resource the apply created.
	SpecBefore json.RawMessage `json:"spec_before"`
	// ResourceIDBefore is the connection id a deleted connection had, so a
	// restore can bring the same connection back. Not shown by the API.
	ResourceIDBefore string `json:"-"`
}

// Revision is a stored revision.
type Revision struct {
	EnvironmentID string
	ID            string
	PlanID        string
	Types         []string
	Counts        Counts
	Resources     []Resource
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

type storedResource struct {
	Resource
	ResourceIDBefore string `json:"resource_id_before,omitempty"`
}

// Encode returns the stored form of the resources; its size is what the
// 10 MiB limit of a revision applies to. Each spec is written in its
// canonical form (canonjson), which a read gives back as it is; the rest as
// encoding/json writes storedResource, without HTML escaping.
func Encode(rs []Resource) ([]byte, error) {
	size := 2
	for _, r := range rs {
		size += len(r.Kind) + len(r.Key) + len(r.Action) + len(r.SpecBefore) + len(r.ResourceIDBefore) + 110
	}
	b := make([]byte, 0, size)
	b = append(b, '[')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendResource(b, r); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// EncodeInPieces writes what Encode returns to emit, in pieces that end
// between resources, each of about piece bytes (more when one resource is
// larger); it returns the size of the whole. A piece is only valid during
// emit: its buffer is used again.
func EncodeInPieces(rs []Resource, piece int, emit func([]byte) error) (int, error) {
	b := make([]byte, 0, piece+piece/8)
	b = append(b, '[')
	n := 0
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendResource(b, r); err != nil {
			return 0, err
		}
		if len(b) >= piece {
			if err := emit(b); err != nil {
				return 0, err
			}
			n += len(b)
			b = b[:0]
		}
	}
	b = append(b, ']')
	return n + len(b), emit(b)
}

// appendResource appends r as Encode writes it.
func appendResource(b []byte, r Resource) ([]byte, error) {
	b = append(b, `{"kind":`...)
	b = canonjson.AppendString(b, r.Kind)
	b = append(b, `,"key":`...)
	b = canonjson.AppendString(b, r.Key)
	b = append(b, `,"action":`...)
	b = canonjson.AppendString(b, r.Action)
	b = append(b, `,"version_before":`...)
	if r.VersionBefore == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*r.VersionBefore), 10)
	}
	b = append(b, `,"spec_before":`...)
	var err error
	if b, err = appendSpec(b, r.SpecBefore); err != nil {
		return nil, fmt.Errorf("revision of %s %s: %w", r.Kind, r.Key, err)
	}
	if r.ResourceIDBefore != "" {
		b = append(b, `,"resource_id_before":`...)
		b = canonjson.AppendString(b, r.ResourceIDBefore)
	}
	return append(b, '}'), nil
}

// appendSpec appends a spec in its canonical form; no spec is null.
func appendSpec(b, spec []byte) ([]byte, error) {
	if len(spec) == 0 {
		return append(b, "null"...), nil
	}
	if canonjson.IsCanonical(spec) {
		return append(b, spec...), nil
	}
	if out, ok := canonjson.Append(b, spec); ok {
		return out, nil
	}
	// Nesting too deep to canonicalise by a scan: kept as a value.
	var buf bytes.Buffer
	if err := json.Compact(&buf, spec); err != nil {
		return nil, err
	}
	return append(b, buf.Bytes()...), nil
}

// DecodeResources reads the stored resources of a revision, the output of
// Encode, specs canonical; a revision stored in jsonb's form (by an older
// replica) is read by encoding/json and its specs made canonical.
func DecodeResources(b []byte) ([]Resource, error) {
	if rs, ok := decodeResources(b); ok {
		return rs, nil
	}
	var stored []storedResource
	if err := json.Unmarshal(b, &stored); err != nil {
		return nil, err
	}
	out := make([]Resource, len(stored))
	for i, s := range stored {
		s.Resource.ResourceIDBefore = s.ResourceIDBefore
		s.Resource.SpecBefore = canonicalSpec(s.Resource.SpecBefore)
		out[i] = s.Resource
	}
	return out, nil
}

// canonicalSpec is a stored spec in its canonical form. Encode wrote it so;
// a revision stored before resources was a json column (or by a replica
// that still wrote jsonb) comes back in jsonb's member order and spacing,
// and is made canonical here: by a scan, or for a value it cannot read
// (nested too deep) by encoding/json.
func canonicalSpec(spec json.RawMessage) json.RawMessage {
	if len(spec) == 0 || canonjson.IsCanonical(spec) {
		return spec
	}
	if out, ok := canonjson.Append(make([]byte, 0, len(spec)), spec); ok {
		return out
	}
	d := json.NewDecoder(bytes.NewReader(spec))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return spec // not reached: the whole revision decoded
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return spec
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// decodeResources reads resources in the layout Encode writes, with
// canonical specs, which it keeps as slices of b; ok is false for anything
// else (a row stored as jsonb), which encoding/json then reads.
func decodeResources(b []byte) (_ []Resource, ok bool) {
	p := reader{b: b}
	if !p.take("[") {
		return nil, false
	}
	out := []Resource{}
	if p.take("]") {
		return out, p.i == len(b)
	}
	var kind, action string // the last ones read: they repeat
	for {
		var r Resource
		if !p.take(`{"kind":`) || !p.strLike(&r.Kind, kind) || !p.take(`,"key":`) || !p.str(&r.Key) || !p.take(`,"action":`) || !p.strLike(&r.Action, action) ||
			!p.take(`,"version_before":`) || !p.intOrNull(&r.VersionBefore) || !p.take(`,"spec_before":`) || !p.spec(&r.SpecBefore) {
			return nil, false
		}
		if p.take(`,"resource_id_before":`) && !p.str(&r.ResourceIDBefore) {
			return nil, false
		}
		if !p.take("}") {
			return nil, false
		}
		kind, action = r.Kind, r.Action
		out = append(out, r)
		if p.take("]") {
			return out, p.i == len(b)
		}
		if !p.take(",") {
			return nil, false
		}
	}
}

// reader reads b from i.
type reader struct {
	b []byte
	i int
	// ints holds the versions read, so that they are not an allocation
	// each: a chunk of them at a time.
	ints []int
}

func (p *reader) take(s string) bool {
	if !bytes.HasPrefix(p.b[p.i:], []byte(s)) {
		return false
	}
	p.i += len(s)
	return true
}

func (p *reader) str(out *string) bool {
	b := p.b
	if p.i >= len(b) || b[p.i] != '"' {
		return false
	}
	end, plain, ok := canonjson.ScanString(b, p.i)
	if !ok {
		return false
	}
	if plain {
		*out = string(b[p.i+1 : end-1])
	} else if *out, ok = canonjson.DecodeString(b[p.i:end]); !ok {
		return false
	}
	p.i = end
	return true
}

// strLike is str, giving like itself when the string is like: a
// revision's kinds and actions repeat from one resource to the next.
func (p *reader) strLike(out *string, like string) bool {
	b := p.b
	if p.i < len(b) && b[p.i] == '"' && like != "" {
		if end, plain, ok := canonjson.ScanString(b, p.i); ok && plain && string(b[p.i+1:end-1]) == like {
			*out, p.i = like, end
			return true
		}
	}
	return p.str(out)
}

func (p *reader) intOrNull(out **int) bool {
	if p.take("null") {
		return true
	}
	j, ok := canonjson.ScanNumber(p.b, p.i)
	if !ok {
		return false
	}
	v, err := strconv.Atoi(string(p.b[p.i:j]))
	if err != nil {
		return false
	}
	if len(p.ints) == cap(p.ints) {
		p.ints = make([]int, 0, 64)
	}
	p.ints = append(p.ints, v)
	p.i, *out = j, &p.ints[len(p.ints)-1]
	return true
}

// spec reads a canonical spec, or null as encoding/json reads it into a
// json.RawMessage.
func (p *reader) spec(out *json.RawMessage) bool {
	if p.take("null") {
		*out = json.RawMessage("null")
		return true
	}
	n := canonjson.PrefixLen(p.b[p.i:])
	if n < 0 {
		return false
	}
	*out = p.b[p.i : p.i+n : p.i+n]
	p.i += n
	return true
}
