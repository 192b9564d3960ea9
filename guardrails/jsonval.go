package guardrails

import (
	"bytes"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/keenauth/configplans/canonjson"
)

// jsonObject is a JSON object as a CEL map that decodes only what a rule
// reads: new.token_lifetime_seconds scans the spec for that member and
// decodes its value alone, an object member stays a jsonObject. Anything
// else (iterating, comparing, a missing member's error) decodes the whole
// object once and answers as a decoded map does. Most rules read a member
// or two of a spec: decoding every spec of a 1,000-change plan whole
// cost as much as evaluating the rules.
type jsonObject struct {
	raw  []byte
	full traits.Mapper // decoded on first need
	// read are the first members read (a nil value for an absent one):
	// a rule reads one or two members of an object, and two rules of the
	// same kind often the same.
	read  [4]member
	nread int
	// index, when set, finds the members in one scan of raw, the first
	// time one is read: a change's new spec, of which the rules of its
	// kind read three or four members, each a scan of the whole spec
	// otherwise (nested objects are read for a member or two, and scanned
	// for each).
	index *memberIndex
}

// memberIndex is where an object's members are in its text: for each,
// the bounds of its name and of its value.
type memberIndex struct {
	scanned bool
	n       int // members found; -1: not an object Members reads, or more than spans holds
	spans   [8][4]int32
}

// member is canonjson.Member(o.raw, name), from o's index when it has one.
func (o *jsonObject) member(name string) (value []byte, ok bool) {
	ix := o.index
	if ix != nil && !ix.scanned {
		ix.scanned = true
		if !canonjson.Members(o.raw, func(m canonjson.Span) bool {
			if ix.n == len(ix.spans) || m.Value[1] > math.MaxInt32 {
				ix.n = -1
				return false
			}
			ix.spans[ix.n] = [4]int32{int32(m.Name[0]), int32(m.Name[1]), int32(m.Value[0]), int32(m.Value[1])}
			ix.n++
			return true
		}) {
			ix.n = -1
		}
	}
	if ix == nil || ix.n < 0 {
		return canonjson.Member(o.raw, name)
	}
	for _, m := range ix.spans[:ix.n] {
		if key := o.raw[m[0]:m[1]]; string(key) == name {
			value = o.raw[m[2]:m[3]]
		} else if strings.EqualFold(string(key), name) {
			return nil, false // as Member: encoding/json's case-insensitive match
		}
	}
	return value, true
}

// member is a member of a jsonObject that was read.
type member struct {
	name string
	val  ref.Val
}

var (
	_ traits.Mapper = (*jsonObject)(nil)
	_ ref.Val       = (*jsonObject)(nil)
)

// jsonValue is the CEL value of a spec or of a part of one.
func jsonValue(raw []byte) ref.Val {
	return jsonValueIn(raw, nil)
}

// jsonValueIn is jsonValue, an object being obj when obj is not nil (the
// caller's storage for it, allocated with other things).
func jsonValueIn(raw []byte, obj *jsonObject) ref.Val {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return types.NullValue
	case raw[0] == '{':
		if obj == nil {
			return &jsonObject{raw: raw}
		}
		*obj = jsonObject{raw: raw}
		return obj
	case raw[0] == '[':
		if elems, ok := jsonElements(raw); ok {
			// As NativeToValue makes a list of them.
			return types.NewList(types.DefaultTypeAdapter, elems)
		}
	}
	if v, ok := jsonScalar(raw); ok {
		return v
	}
	return types.DefaultTypeAdapter.NativeToValue(decodeJSON(raw))
}

// jsonScalar reads the scalars that need no unescaping or rounding (most
// of a spec's) without encoding/json; ok is false for any other.
func jsonScalar(raw []byte) (ref.Val, bool) {
	switch {
	case len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"':
		body := raw[1 : len(raw)-1]
		if bytes.IndexByte(body, '\\') >= 0 || bytes.IndexByte(body, '"') >= 0 || !utf8.Valid(body) {
			return nil, false
		}
		return types.String(body), true
	case bytes.Equal(raw, []byte("true")):
		return types.True, true
	case bytes.Equal(raw, []byte("false")):
		return types.False, true
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n > -1<<53 && n < 1<<53 {
		return types.Int(n), true
	}
	return nil, false
}

// jsonElements are the values of a compact JSON array, each as jsonValue
// makes it (an object stays lazy); ok is false for any other text. The
// elements are found first (up to 16 on the stack), so that the list and
// the objects among them are an allocation each.
func jsonElements(raw []byte) ([]ref.Val, bool) {
	if len(raw) > 1 && raw[1] == ']' {
		return []ref.Val{}, len(raw) == 2
	}
	var small [16][2]int
	bounds, objects := small[:0], 0
	for i := 1; ; {
		if i >= len(raw) {
			return nil, false
		}
		end, ok := canonjson.SkipValue(raw, i)
		if !ok || end >= len(raw) {
			return nil, false
		}
		if e := bytes.TrimSpace(raw[i:end]); len(e) > 0 && e[0] == '{' {
			objects++
		}
		bounds = append(bounds, [2]int{i, end})
		if raw[end] == ']' {
			if end != len(raw)-1 {
				return nil, false
			}
			break
		}
		if raw[end] != ',' {
			return nil, false
		}
		i = end + 1
	}
	out := make([]ref.Val, len(bounds))
	var objs []jsonObject
	if objects > 0 {
		objs = make([]jsonObject, objects)
	}
	for k, b := range bounds {
		var obj *jsonObject
		if e := bytes.TrimSpace(raw[b[0]:b[1]]); len(e) > 0 && e[0] == '{' {
			obj, objs = &objs[0], objs[1:]
		}
		out[k] = jsonValueIn(raw[b[0]:b[1]], obj)
	}
	return out, true
}

func (o *jsonObject) decoded() traits.Mapper {
	if o.full == nil {
		m, _ := decodeJSON(o.raw).(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		o.full = types.DefaultTypeAdapter.NativeToValue(m).(traits.Mapper)
	}
	return o.full
}

// Find reads the member key from the text when it can.
func (o *jsonObject) Find(key ref.Val) (ref.Val, bool) {
	if name, ok := key.(types.String); ok && o.full == nil {
		for _, m := range o.read[:o.nread] {
			if m.name == string(name) {
				return m.val, m.val != nil
			}
		}
		if raw, ok := o.member(string(name)); ok {
			var v ref.Val
			if raw != nil {
				v = jsonValue(raw)
			}
			if o.nread < len(o.read) {
				o.read[o.nread] = member{name: string(name), val: v}
				o.nread++
			}
			return v, v != nil
		}
	}
	return o.decoded().Find(key)
}

// Get answers as Find, and a missing member as a decoded map does.
func (o *jsonObject) Get(key ref.Val) ref.Val {
	if v, ok := o.Find(key); ok {
		return v
	}
	return o.decoded().Get(key)
}

func (o *jsonObject) Contains(key ref.Val) ref.Val { return o.decoded().Contains(key) }
func (o *jsonObject) Iterator() traits.Iterator    { return o.decoded().Iterator() }
func (o *jsonObject) Size() ref.Val                { return o.decoded().Size() }
func (o *jsonObject) Equal(other ref.Val) ref.Val {
	if x, ok := other.(*jsonObject); ok {
		other = x.decoded()
	}
	return o.decoded().Equal(other)
}
func (o *jsonObject) ConvertToNative(t reflect.Type) (any, error) {
	return o.decoded().ConvertToNative(t)
}
func (o *jsonObject) ConvertToType(t ref.Type) ref.Val { return o.decoded().ConvertToType(t) }
func (o *jsonObject) Type() ref.Type                   { return types.MapType }
func (o *jsonObject) Value() any                       { return o.decoded().Value() }
