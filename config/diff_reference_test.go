package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// referenceDiff is Diff as it was written on generic values decoded by
// encoding/json, kept to hold the walk of canonical bytes to it. It
// compares two specs; nil (or JSON null) is an absent spec. nil → x is
// one add of the whole spec at "", x → nil one remove at "" with the whole
// spec as old. Objects are compared member by member, recursively, in
// sorted member order (add, remove, replace at escaped paths). The arrays
// of refIdentityArrays are compared element by element (see refDiffArray); any
// other array, and scalars, that differ are one replace of the whole
// value. Every replace and remove carries old, the value before. Applied in
// order with RFC 6902 semantics to before, the operations give after.
// Equal specs give an empty, non-nil slice.
func referenceDiff(before, after json.RawMessage) []DiffOp {
	ops := []DiffOp{}
	if len(before) > 0 && bytes.Equal(before, after) {
		return ops // the same bytes hold the same value
	}
	b, bOK := decodeForDiff(before)
	a, aOK := decodeForDiff(after)
	switch {
	case b == nil && a == nil:
		if !bOK || !aOK {
			if !bytes.Equal(bytes.TrimSpace(before), bytes.TrimSpace(after)) {
				// Bytes that are not JSON have no value to name as old.
				ops = append(ops, DiffOp{Op: "replace", Path: "", Old: json.RawMessage("null"), Value: after})
			}
		}
		return ops
	case b == nil:
		return append(ops, DiffOp{Op: "add", Path: "", Value: CanonicalJSON(a)})
	case a == nil:
		return append(ops, DiffOp{Op: "remove", Path: "", Old: CanonicalJSON(b)})
	}
	return refDiffValues(ops, "", "", b, a)
}

// An refElementIdentity names an array element: two elements with the same
// identity are the same element, changed or not. ok is false for an
// element that has no identity (not of the shape the array holds).
type refElementIdentity func(element any) (id string, ok bool)

// refIdentityArrays are the arrays of the specs whose elements have an
// identity (§13), by their shape: the pointer to the array with every
// array index written as "*".
var refIdentityArrays = map[string]refElementIdentity{
	"/allowed_identifiers": refStringIdentity,
	"/callback_urls":       refStringIdentity,
	"/connections":         refStringIdentity,
	"/oidc/scopes":         refStringIdentity,
	"/api_grants/*/scopes": refStringIdentity,
	"/scopes":              refMembersIdentity("value"),
	"/permissions":         refMembersIdentity("api", "scope"),
	"/api_grants":          refMembersIdentity("api"),
}

func refStringIdentity(element any) (string, bool) {
	s, ok := element.(string)
	return s, ok
}

// refMembersIdentity identifies an object element by the string members
// named.
func refMembersIdentity(members ...string) refElementIdentity {
	return func(element any) (string, bool) {
		obj, ok := element.(map[string]any)
		if !ok {
			return "", false
		}
		values := make([]string, len(members))
		for i, m := range members {
			if values[i], ok = obj[m].(string); !ok {
				return "", false
			}
		}
		return string(CanonicalJSON(values)), true
	}
}

// refDiffValues appends the operations from before to after at path; shape is
// path with every array index written as "*".
func refDiffValues(ops []DiffOp, path, shape string, before, after any) []DiffOp {
	if id, ok := refIdentityArrays[shape]; ok {
		bl, bIsList := before.([]any)
		al, aIsList := after.([]any)
		if bIsList && aIsList {
			return refDiffArray(ops, path, shape, bl, al, id)
		}
	}
	bo, bIsObj := before.(map[string]any)
	ao, aIsObj := after.(map[string]any)
	if !bIsObj || !aIsObj {
		if !reflect.DeepEqual(before, after) {
			ops = append(ops, DiffOp{Op: "replace", Path: path, Old: CanonicalJSON(before), Value: CanonicalJSON(after)})
		}
		return ops
	}
	keys := make([]string, 0, len(bo)+len(ao))
	for k := range bo {
		keys = append(keys, k)
	}
	for k := range ao {
		if _, both := bo[k]; !both {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := path + "/" + PointerEscape(k)
		bv, inB := bo[k]
		av, inA := ao[k]
		switch {
		case !inA:
			ops = append(ops, DiffOp{Op: "remove", Path: p, Old: CanonicalJSON(bv)})
		case !inB:
			ops = append(ops, DiffOp{Op: "add", Path: p, Value: CanonicalJSON(av)})
		default:
			ops = refDiffValues(ops, p, shape+"/"+PointerEscape(k), bv, av)
		}
	}
	return ops
}

// refDiffArray compares two arrays whose elements have an identity, in the
// order of §13, so that the operations applied in order give after: first
// a remove of every element that disappears, at its index in before,
// highest first; then the changes inside every element both keep, at its
// index once the removals are done; then an add of every element that
// appears, at its index in after, lowest first. When the kept elements are
// in another order in after, or an element has no identity, or an identity
// repeats within one array (validation refuses duplicates in every one of
// these arrays, so only a spec stored unvalidated could hold one), the
// whole array is one replace.
func refDiffArray(ops []DiffOp, path, shape string, before, after []any, identity refElementIdentity) []DiffOp {
	replace := func() []DiffOp {
		if reflect.DeepEqual(before, after) {
			return ops
		}
		return append(ops, DiffOp{Op: "replace", Path: path, Old: CanonicalJSON(before), Value: CanonicalJSON(after)})
	}
	bIDs, bIndex, ok := refIdentities(before, identity)
	if !ok {
		return replace()
	}
	aIDs, aIndex, ok := refIdentities(after, identity)
	if !ok {
		return replace()
	}
	var keptBefore, keptAfter []string
	for _, id := range bIDs {
		if _, kept := aIndex[id]; kept {
			keptBefore = append(keptBefore, id)
		}
	}
	for _, id := range aIDs {
		if _, kept := bIndex[id]; kept {
			keptAfter = append(keptAfter, id)
		}
	}
	if !slices.Equal(keptBefore, keptAfter) {
		return replace()
	}
	for i := len(before) - 1; i >= 0; i-- {
		if _, kept := aIndex[bIDs[i]]; !kept {
			ops = append(ops, DiffOp{Op: "remove", Path: path + "/" + strconv.Itoa(i), Old: CanonicalJSON(before[i])})
		}
	}
	for i, id := range keptBefore {
		ops = refDiffValues(ops, path+"/"+strconv.Itoa(i), shape+"/*", before[bIndex[id]], after[aIndex[id]])
	}
	for i, id := range aIDs {
		if _, kept := bIndex[id]; !kept {
			ops = append(ops, DiffOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: CanonicalJSON(after[i])})
		}
	}
	return ops
}

// refIdentities returns the identity of every element and the index of every
// identity; ok is false when an element has none or an identity repeats.
func refIdentities(list []any, identity refElementIdentity) (ids []string, index map[string]int, ok bool) {
	ids = make([]string, len(list))
	index = make(map[string]int, len(list))
	for i, e := range list {
		id, ok := identity(e)
		if !ok {
			return nil, nil, false
		}
		if _, dup := index[id]; dup {
			return nil, nil, false
		}
		ids[i], index[id] = id, i
	}
	return ids, index, true
}

// sameDiff reports whether two diffs are the same operations with the same
// bytes.
func sameDiff(x, y []DiffOp) bool {
	return x != nil && y != nil && slices.EqualFunc(x, y, func(a, b DiffOp) bool {
		return a.Op == b.Op && a.Path == b.Path && bytes.Equal(a.Old, b.Old) && bytes.Equal(a.Value, b.Value)
	})
}

func checkSameDiff(t *testing.T, context string, before, after []byte) bool {
	t.Helper()
	got, want := Diff(before, after), referenceDiff(before, after)
	if !sameDiff(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%sDiff(%s, %s)\n= %s\nreference %s", context, before, after, g, w)
		return false
	}
	return true
}

// TestDiffAgreesWithTheDiffOfDecodedValues holds Diff to referenceDiff on
// the generated specs of TestDiffAppliesToGeneratedSpecs, canonical and in
// jsonb's form, and on values that are not specs or not JSON.
func TestDiffAgreesWithTheDiffOfDecodedValues(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	kinds := []func(*rand.Rand) map[string]any{genApplication, genAPI, genRole, genIdentitySettings, genEnterpriseConnection}
	for i := range 3000 {
		gen := kinds[i%len(kinds)]
		before := gen(rng)
		after := mutate(rng, before)
		if rng.IntN(3) == 0 {
			after = gen(rng)
		}
		b, a := CanonicalJSON(before), CanonicalJSON(after)
		ctx := fmt.Sprintf("case %d: ", i)
		if !checkSameDiff(t, ctx, b, a) || !checkSameDiff(t, ctx, a, b) ||
			!checkSameDiff(t, ctx, spaced(b), a) || !checkSameDiff(t, ctx, b, spaced(a)) {
			return
		}
	}
	odd := []string{"", " ", "null", " null ", "{}", "[]", `"x"`, "1", "1.0", "true", "{", `{"a":1} x`, `{"a":1}{"a":2}`, "nope",
		`{"a":1,"a":2}`, `{"b":[1,2],"a":{"c":"<&>"}}`, `{"scopes":[{"value":"a"},{"value":"a"}]}`, `{"scopes":[{"value":"a"},"b"]}`,
		`{"scopes":[{"value":"a","description":"x"},{"value":"b"}]}`, `{"scopes":[{"value":"b"},{"value":"a","description":"y"}]}`,
		`{"callback_urls":["https://a","https://b\u0026c"]}`, `{"callback_urls":["https://b&c","https://d"]}`,
		`{"permissions":[{"api":"a","scope":"s"},{"api":"a\"","scope":"s"}]}`, `{"permissions":[{"api":"a\"","scope":"s"}]}`,
		`{"a\/b~c":1,"\u00e9":[1]}`, `{"a/b~c":2,"é":[2]}`, `{"x":"\u2028"}`, "{\"x\":\"\u2028\"}", `[{"a":1}]`, `{"api_grants":[{"api":"x","scopes":["a","b"]}]}`,
		`{"api_grants":[{"api":"x","scopes":["b","c"]},{"api":"y"}]}`, `{"":1,"a":2}`, `{"":[2]}`, `{"\\":1,"\"":3}`}
	var long, longer []string
	for i := range 40 {
		long = append(long, fmt.Sprintf("%q", fmt.Sprint("https://", i)))
		if i%3 != 0 {
			longer = append(longer, fmt.Sprintf("%q", fmt.Sprint("https://", i*2)))
		}
	}
	odd = append(odd, `{"callback_urls":[`+strings.Join(long, ",")+`]}`, `{"callback_urls":[`+strings.Join(longer, ",")+`]}`,
		`{"callback_urls":[`+strings.Join(long[:30], ",")+`,"dup","dup"]}`)
	// A member named "*" has the shape of an array element; two-member
	// identities past the longest list found by a scan; the same list with
	// one element moved, or one element repeated, or one without its
	// identity.
	odd = append(odd, `{"api_grants":{"*":{"scopes":["a","b"]}}}`, `{"api_grants":{"*":{"scopes":["b","c"]}}}`,
		`{"scopes":[{"value":"a"},{"value":"a","description":"x"}]}`, `{"scopes":[{"value":"a"},{"value":"a","description":"y"}]}`)
	var perms []string
	for i := range 20 {
		perms = append(perms, fmt.Sprintf(`{"api":"a%d","scope":"s%d"}`, i%3, i))
	}
	moved := append(slices.Clone(perms[1:]), perms[0])
	odd = append(odd, `{"permissions":[`+strings.Join(perms, ",")+`]}`, `{"permissions":[`+strings.Join(perms[2:], ",")+`,{"api":"b","scope":"s"}]}`,
		`{"permissions":[`+strings.Join(moved, ",")+`]}`, `{"permissions":[`+strings.Join(perms, ",")+`,`+perms[5]+`]}`,
		`{"permissions":[`+strings.Join(perms, ",")+`,{"api":"a"}]}`, `{"permissions":[{"api":"a0s","scope":"1"},{"api":"a0","scope":"s1"}]}`)
	for _, x := range odd {
		for _, y := range odd {
			if !checkSameDiff(t, "", []byte(x), []byte(y)) {
				return
			}
		}
	}
}

// spaced writes canonical JSON as jsonb does: members in jsonb's order
// (shorter names first) with a space after every colon and comma.
func spaced(b []byte) []byte {
	var out bytes.Buffer
	var write func(v any)
	write = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.SortFunc(keys, func(a, b string) int {
				if len(a) != len(b) {
					return len(a) - len(b)
				}
				return strings.Compare(a, b)
			})
			out.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					out.WriteString(", ")
				}
				out.Write(CanonicalJSON(k))
				out.WriteString(": ")
				write(x[k])
			}
			out.WriteByte('}')
		case []any:
			out.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					out.WriteString(", ")
				}
				write(e)
			}
			out.WriteByte(']')
		default:
			out.Write(CanonicalJSON(x))
		}
	}
	write(mustDecode(b))
	return out.Bytes()
}

func FuzzDiffAgreesWithTheDiffOfDecodedValues(f *testing.F) {
	f.Add([]byte(`{"scopes":[{"value":"a","description":"x"},{"value":"b"}],"display_name":"A"}`), []byte(`{"scopes":[{"value":"b"},{"value":"c"}]}`))
	f.Add([]byte(`{"a":1}`), []byte(`null`))
	f.Add([]byte(`{"callback_urls":["a","b"]}`), []byte(`{"callback_urls":["b","a"], "x": [1, 2]}`))
	f.Fuzz(func(t *testing.T, before, after []byte) { checkSameDiff(t, "", before, after) })
}

// benchSpecs are an api spec as the revision diff of P10 reads it: before
// canonical (from the revision), now in jsonb's form (from resources),
// with the first scope's description changed.
func benchSpecs() (before, now []byte) {
	spec := func(variant int) map[string]any {
		scopes := make([]any, 4)
		for i := range scopes {
			scopes[i] = map[string]any{"value": fmt.Sprintf("items-%02d:read", i),
				"description": fmt.Sprintf("Scope %d of api-00001, variant %d. %s", i, variant*i, strings.Repeat("x", 70))}
		}
		return map[string]any{"identifier": "https://api.bench.example/api-00001", "display_name": "Bench API api-00001",
			"scopes": scopes, "token_lifetime_seconds": json.Number("3600")}
	}
	return CanonicalJSON(spec(1)), spaced(CanonicalJSON(spec(2)))
}

func BenchmarkDiffReference(b *testing.B) {
	before, now := benchSpecs()
	for b.Loop() {
		_ = referenceDiff(Canonical(now), before)
	}
}

func BenchmarkDiff(b *testing.B) {
	before, now := benchSpecs()
	for b.Loop() {
		_ = Diff(now, before)
	}
}

// BenchmarkDiffCanonical is the walk of P10's revision diff alone: two
// canonical api specs whose first scope's description differs.
func BenchmarkDiffCanonical(b *testing.B) {
	before, now := benchSpecs()
	now = Canonical(now)
	for b.Loop() {
		_ = DiffCanonical(now, before)
	}
}
