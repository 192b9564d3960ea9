package guardrails

import (
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// The members of the variables change and environment, in the order of
// their values in a record.
var (
	changeFields      = []string{"kind", "key", "action"}
	environmentFields = []string{"id", "name"}
)

// record is change or environment as a CEL map of strings: a member is
// found by its name among a few, its value made at its first read, where
// a Go map turned into a CEL map makes a value at every read. Anything
// else than reading a member (iterating, comparing, a missing member's
// error) answers as that map does.
type record struct {
	names  []string
	values [3]string
	boxed  [3]ref.Val
	full   traits.Mapper
}

var (
	_ traits.Mapper = (*record)(nil)
	_ ref.Val       = (*record)(nil)
)

// newRecord is a record of up to three members.
func newRecord(names []string, values ...string) *record {
	r := &record{names: names}
	copy(r.values[:], values)
	return r
}

func (r *record) mapper() traits.Mapper {
	if r.full == nil {
		m := make(map[string]string, len(r.names))
		for i, n := range r.names {
			m[n] = r.values[i]
		}
		r.full = types.NewStringStringMap(types.DefaultTypeAdapter, m)
	}
	return r.full
}

// Find reads a member by its name.
func (r *record) Find(key ref.Val) (ref.Val, bool) {
	if name, ok := key.(types.String); ok {
		for i, n := range r.names {
			if n == string(name) {
				if r.boxed[i] == nil {
					r.boxed[i] = types.String(r.values[i])
				}
				return r.boxed[i], true
			}
		}
	}
	return r.mapper().Find(key)
}

// Get answers as Find, and a missing member as the map does.
func (r *record) Get(key ref.Val) ref.Val {
	if v, ok := r.Find(key); ok {
		return v
	}
	return r.mapper().Get(key)
}

func (r *record) Contains(key ref.Val) ref.Val { return r.mapper().Contains(key) }
func (r *record) Iterator() traits.Iterator    { return r.mapper().Iterator() }
func (r *record) Size() ref.Val                { return types.Int(len(r.names)) }
func (r *record) Equal(other ref.Val) ref.Val {
	if x, ok := other.(*record); ok {
		other = x.mapper()
	}
	return r.mapper().Equal(other)
}
func (r *record) ConvertToNative(t reflect.Type) (any, error) {
	return r.mapper().ConvertToNative(t)
}
func (r *record) ConvertToType(t ref.Type) ref.Val { return r.mapper().ConvertToType(t) }
func (r *record) Type() ref.Type                   { return types.MapType }
func (r *record) Value() any                       { return r.mapper().Value() }
