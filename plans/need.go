package plans

import (
	"context"
	"encoding/json"
	"fmt"

	"gorm.io/gorm"
)

// need is the part of an environment that planning or applying a set of
// changes must see, so that the cost of a plan grows with its changes and
// not with the environment: the resources it names, those its references
// point to, those that hold one of its unique values, and — only for a
// deletion, whose referrers can be anywhere, or for prune, which must know
// every key — whole kinds.
type need struct {
	keys    map[Kind]map[string]bool
	full    map[Kind]bool
	uniques map[Kind]map[string]map[string]bool // kind → field → UniqueValue.Key
}

func newNeed() *need {
	return &need{keys: map[Kind]map[string]bool{}, full: map[Kind]bool{}, uniques: map[Kind]map[string]map[string]bool{}}
}

func (n *need) key(k Kind, key string) {
	if n.keys[k] == nil {
		n.keys[k] = map[string]bool{}
	}
	n.keys[k][key] = true
}

func (n *need) kind(k Kind) { n.full[k] = true }

// resource records what a resource's planned spec (nil: a deletion) needs
// besides the resource itself.
func (n *need) resource(k Kind, key string, spec json.RawMessage) {
	n.key(k, key)
	if spec == nil {
		for _, rk := range referencedBy[k] {
			n.kind(rk)
		}
		return
	}
	for _, ref := range References(k, key, spec) {
		n.key(ref.Kind, ref.Key)
	}
	for _, u := range UniqueValues(k, spec) {
		if n.uniques[k] == nil {
			n.uniques[k] = map[string]map[string]bool{}
		}
		if n.uniques[k][u.Field] == nil {
			n.uniques[k][u.Field] = map[string]bool{}
		}
		n.uniques[k][u.Field][u.Key] = true
	}
}

// uniqueColumn is the SQL expression, indexed, that holds UniqueValue.Key
// of a unique field of a spec: the stored folded display name, the
// identifier itself. The fields come from a fixed set, never from a request.
func uniqueColumn(db *gorm.DB, field string) (string, error) {
	switch field {
	case "display_name":
		return "display_name_key", nil
	case "identifier":
		if isSQLite(db) {
			return "json_extract(spec, '$.identifier')", nil
		}
		return "(spec->>'identifier')", nil
	}
	return "", fmt.Errorf("no unique field %q", field)
}

// loadBatch is how many keys or values one query names.
const loadBatch = 500

// load reads what n names, in tx. With canonicalize, every spec is
// re-encoded canonically (PostgreSQL's jsonb reorders keys), which the
// planner needs to compare specs byte for byte; the apply only decodes them.
func (n *need) load(ctx context.Context, tx *gorm.DB, envID string, canonicalize bool) (state, error) {
	st := state{}
	add := func(rows []Resource) {
		for i := range rows {
			r := &rows[i]
			if st[r.Kind] == nil {
				st[r.Kind] = map[string]*Resource{}
			}
			if st[r.Kind][r.Key] == nil {
				if canonicalize {
					r.Spec = JSON(canonical(r.Spec))
				}
				st[r.Kind][r.Key] = r
			}
		}
	}
	for _, k := range Kinds {
		st[k.Kind] = map[string]*Resource{}
		if !n.full[k.Kind] {
			continue
		}
		var rows []Resource
		if err := tx.WithContext(ctx).Where("environment_id = ? AND kind = ?", envID, k.Kind).Find(&rows).Error; err != nil {
			return nil, interpretError(err)
		}
		add(rows)
	}
	var pairs [][]any
	for k, keys := range n.keys {
		if n.full[k] {
			continue
		}
		for key := range keys {
			pairs = append(pairs, []any{string(k), key})
		}
	}
	for len(pairs) > 0 {
		batch := pairs[:min(len(pairs), loadBatch)]
		pairs = pairs[len(batch):]
		var rows []Resource
		if err := tx.WithContext(ctx).Where("environment_id = ? AND (kind, key) IN ?", envID, batch).Find(&rows).Error; err != nil {
			return nil, interpretError(err)
		}
		add(rows)
	}
	for k, fields := range n.uniques {
		if n.full[k] {
			continue
		}
		for field, set := range fields {
			col, err := uniqueColumn(tx, field)
			if err != nil {
				return nil, err
			}
			values := make([]string, 0, len(set))
			for v := range set {
				values = append(values, v)
			}
			for len(values) > 0 {
				batch := values[:min(len(values), loadBatch)]
				values = values[len(batch):]
				var rows []Resource
				err := tx.WithContext(ctx).Where("environment_id = ? AND kind = ? AND "+col+" IN ?", envID, k, batch).Find(&rows).Error
				if err != nil {
					return nil, interpretError(err)
				}
				add(rows)
			}
			if field == "display_name" {
				// A row without its key (written by a replica of the release
				// before migration 0004, during a rolling upgrade, after the
				// migrator's backfill) may hold any name: it is read too, and
				// compared on the key computed from its spec. There are none
				// once every replica writes the key.
				var rows []Resource
				err := tx.WithContext(ctx).Where("environment_id = ? AND kind = ? AND display_name_key IS NULL", envID, k).Find(&rows).Error
				if err != nil {
					return nil, interpretError(err)
				}
				add(rows)
			}
		}
	}
	return st, nil
}
