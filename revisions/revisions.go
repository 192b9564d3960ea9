// Package revisions keeps the configuration of the resources an apply
// changed, as it was before the apply: the 50 most recent per environment,
// none older than 90 days.
package revisions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

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

type row struct {
	EnvironmentID string `gorm:"primaryKey"`
	ID            string `gorm:"primaryKey"`
	PlanID        string
	Types         []byte `gorm:"type:jsonb"`
	Counts        []byte `gorm:"type:jsonb"`
	Resources     []byte `gorm:"type:json"`
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

func (row) TableName() string { return "config_revisions" }

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
		b = append(b, '}')
	}
	return append(b, ']'), nil
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

// Record writes a revision in tx; resources is the output of Encode.
func Record(tx *gorm.DB, rev Revision, resources []byte) error {
	types, _ := json.Marshal(rev.Types)
	counts, _ := json.Marshal(rev.Counts)
	return tx.Create(&row{EnvironmentID: rev.EnvironmentID, ID: rev.ID, PlanID: rev.PlanID, Types: types, Counts: counts,
		Resources: resources, CreatedAt: rev.CreatedAt, ExpiresAt: rev.ExpiresAt}).Error
}

// Prune deletes the revisions of env beyond the keep most recent and those
// expired at now. It returns how many it deleted.
func Prune(tx *gorm.DB, env string, keep int, now time.Time) (int, error) {
	noLimit := "" // SQLite has no OFFSET without a LIMIT, and spells "no limit" -1
	if tx.Dialector.Name() == "sqlite" {
		noLimit = "LIMIT -1 "
	}
	res := tx.Exec(`DELETE FROM config_revisions WHERE environment_id = ? AND (expires_at <= ? OR id IN (
		SELECT id FROM config_revisions WHERE environment_id = ? ORDER BY id DESC `+noLimit+`OFFSET ?))`, env, now, env, keep)
	return int(res.RowsAffected), res.Error
}

// visible is the condition of a revision that may be returned: unexpired
// and among the keep most recent of its environment.
func visible(db *gorm.DB, env string, keep int, now time.Time) *gorm.DB {
	return db.Where("environment_id = ? AND expires_at > ? AND id >= COALESCE((SELECT id FROM config_revisions WHERE environment_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?), '')",
		env, now, env, keep-1)
}

// Get returns a visible revision of env.
func Get(ctx context.Context, db *gorm.DB, env, id string, keep int, now time.Time) (*Revision, error) {
	var r row
	err := visible(db.WithContext(ctx), env, keep, now).Where("id = ?", id).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return decode(r, true)
}

// List returns visible revisions of env, newest first, without resources:
// up to limit+1 rows older than cursor (when set).
func List(ctx context.Context, db *gorm.DB, env, cursor string, limit, keep int, now time.Time) ([]*Revision, error) {
	q := visible(db.WithContext(ctx).Omit("resources"), env, keep, now)
	if cursor != "" {
		q = q.Where("id < ?", cursor)
	}
	var rows []row
	if err := q.Order("id DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*Revision, 0, len(rows))
	for _, r := range rows {
		rev, err := decode(r, false)
		if err != nil {
			return nil, err
		}
		out = append(out, rev)
	}
	return out, nil
}

func decode(r row, withResources bool) (*Revision, error) {
	rev := &Revision{EnvironmentID: r.EnvironmentID, ID: r.ID, PlanID: r.PlanID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
	if err := json.Unmarshal(r.Types, &rev.Types); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(r.Counts, &rev.Counts); err != nil {
		return nil, err
	}
	if withResources {
		if rs, ok := decodeResources(r.Resources); ok {
			rev.Resources = rs
			return rev, nil
		}
		var stored []storedResource
		if err := json.Unmarshal(r.Resources, &stored); err != nil {
			return nil, err
		}
		rev.Resources = make([]Resource, len(stored))
		for i, s := range stored {
			s.Resource.ResourceIDBefore = s.ResourceIDBefore
			s.Resource.SpecBefore = canonicalSpec(s.Resource.SpecBefore)
			rev.Resources[i] = s.Resource
		}
	}
	return rev, nil
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
	for {
		var r Resource
		if !p.take(`{"kind":`) || !p.str(&r.Kind) || !p.take(`,"key":`) || !p.str(&r.Key) || !p.take(`,"action":`) || !p.str(&r.Action) ||
			!p.take(`,"version_before":`) || !p.intOrNull(&r.VersionBefore) || !p.take(`,"spec_before":`) || !p.spec(&r.SpecBefore) {
			return nil, false
		}
		if p.take(`,"resource_id_before":`) && !p.str(&r.ResourceIDBefore) {
			return nil, false
		}
		if !p.take("}") {
			return nil, false
		}
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
	plain := true
	for j := p.i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			if plain {
				*out = string(b[p.i+1 : j])
			} else if err := json.Unmarshal(b[p.i:j+1], out); err != nil {
				return false
			}
			p.i = j + 1
			return true
		case c == '\\':
			plain = false
			j++
		case c < 0x20 || c >= 0x7f:
			plain = false
		}
	}
	return false
}

func (p *reader) intOrNull(out **int) bool {
	if p.take("null") {
		return true
	}
	j := p.i
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		j++
	}
	digits := p.b[p.i:j]
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > 1 && digits[0] == '0' {
		return false // not JSON
	}
	v, err := strconv.Atoi(string(p.b[p.i:j]))
	if err != nil {
		return false
	}
	p.i, *out = j, &v
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
