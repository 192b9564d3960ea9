package guardrails

import (
	"fmt"
	"strings"
	"testing"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// TestJSONValueIsTheDecodedValue: the lazy value of a spec's part (arrays
// of up to 16 elements and more, of objects, scalars and arrays; specs are
// canonical, compact) equals the value its decoding gives, element by element and
// member by member, and an array that is not JSON is read as the decoding
// reads it.
func TestJSONValueIsTheDecodedValue(t *testing.T) {
	t.Parallel()
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf(`{"value":"s-%d","n":%d}`, i, i)
	}
	inputs := []string{`[]`, `[1]`, `["a","b"]`, `[{"value":"x"},"y",3,true,null,[1,{"a":[]}]]`,
		`[ {"value": "x"} , 2 ]`, "[" + strings.Join(many, ",") + "]", "[" + strings.Join(many[:16], ",") + "]",
		"[" + strings.Join(many[:17], ",") + "]", `{"a":[{"b":1},{"b":2}],"c":"d"}`, `[1,`, `[1]x`}
	for _, in := range inputs {
		got := jsonValue([]byte(in))
		want := types.DefaultTypeAdapter.NativeToValue(decodeJSON([]byte(in)))
		if eq := equalDeep(got, want); !eq {
			t.Errorf("jsonValue(%s) = %v, want %v", in, got.Value(), want.Value())
		}
	}
}

// equalDeep compares two CEL values element by element, reading each
// member of a lazy object by Find.
func equalDeep(a, b ref.Val) bool {
	la, aList := a.(traits.Lister)
	lb, bList := b.(traits.Lister)
	if aList || bList {
		if !aList || !bList || la.Size() != lb.Size() {
			return false
		}
		for i := range int64(la.Size().(types.Int)) {
			if !equalDeep(la.Get(types.Int(i)), lb.Get(types.Int(i))) {
				return false
			}
		}
		return true
	}
	if ob, ok := b.(traits.Mapper); ok {
		oa, ok := a.(traits.Mapper)
		if !ok || oa.Size() != ob.Size() {
			return false
		}
		for it := ob.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			va, found := oa.Find(k)
			vb, _ := ob.Find(k)
			if !found || !equalDeep(va, vb) {
				return false
			}
		}
		return true
	}
	return a.Equal(b) == types.True
}

// A spec with a member index (a change's new spec) answers every read as
// the same spec without one, and as its decoding: members found, absent,
// repeated, matching only case-insensitively, and objects the index cannot
// read (an escaped name, malformed text).
func TestIndexedObjectFindsAsTheScanDoes(t *testing.T) {
	t.Parallel()
	specs := []string{
		`{"display_name":"A","identifier":"https://a","scopes":[{"value":"x"}],"token_lifetime_seconds":3600}`,
		`{"a":1,"a":2,"b":{"c":[1,2]}}`,
		`{"Name":"x","name":"y"}`,
		`{"n\u0061me":"x","other":1}`,
		`{}`,
		`{"a":1,`,
	}
	names := []string{"display_name", "identifier", "scopes", "token_lifetime_seconds", "a", "b", "name", "Name", "NAME", "other", "missing"}
	for _, spec := range specs {
		plain := jsonValue([]byte(spec))
		var obj jsonObject
		indexed := jsonValueIn([]byte(spec), &obj)
		if o, ok := indexed.(*jsonObject); ok {
			o.index = &memberIndex{}
		}
		pm, pOK := plain.(traits.Mapper)
		im, iOK := indexed.(traits.Mapper)
		if pOK != iOK {
			t.Fatalf("%s: a map %v without the index, %v with it", spec, pOK, iOK)
		}
		if !pOK {
			continue
		}
		for _, name := range names {
			pv, pf := pm.Find(types.String(name))
			iv, ifound := im.Find(types.String(name))
			if pf != ifound || (pf && !equalDeep(pv, iv)) {
				t.Errorf("%s: Find(%q) = %v, %v with the index; %v, %v without", spec, name, iv, ifound, pv, pf)
			}
		}
	}
}
