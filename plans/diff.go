package plans

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
)

// DiffOp is one RFC 6902-style operation from the current spec to the
// planned one. Old is the value at Path before the operation: set on every
// replace and remove that Diff makes, never on an add.
type DiffOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Old   json.RawMessage `json:"old,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// MarshalJSON writes an add as {op, path, value}, a replace as {op, path,
// old, value} and a remove as {op, path, old}: value is left out of a
// remove, and value and old are written even when they are JSON null. An
// op decoded from a plan stored before old was recorded has no Old, and old
// is then left out rather than written as a null it never was.
func (d DiffOp) MarshalJSON() ([]byte, error) {
	value := d.Value
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	switch {
	case d.Op == "add":
		return json.Marshal(struct {
			Op    string          `json:"op"`
			Path  string          `json:"path"`
			Value json.RawMessage `json:"value"`
		}{d.Op, d.Path, value})
	case d.Op == "remove":
		return json.Marshal(struct {
			Op   string          `json:"op"`
			Path string          `json:"path"`
			Old  json.RawMessage `json:"old,omitempty"`
		}{d.Op, d.Path, d.Old})
	default:
		return json.Marshal(struct {
			Op    string          `json:"op"`
			Path  string          `json:"path"`
			Old   json.RawMessage `json:"old,omitempty"`
			Value json.RawMessage `json:"value"`
		}{d.Op, d.Path, d.Old, value})
	}
}

// Diff compares two specs; nil (or JSON null) is an absent spec. nil → x is
// one add of the whole spec at "", x → nil one remove at "" with the whole
// spec as old. Objects are compared member by member, recursively, in
// sorted member order (add, remove, replace at escaped paths). The arrays
// of identityArrays are compared element by element (see diffArray); any
// other array, and scalars, that differ are one replace of the whole
// value. Every replace and remove carries old, the value before. Applied in
// order with RFC 6902 semantics to before, the operations give after.
// Equal specs give an empty, non-nil slice.
func Diff(before, after json.RawMessage) []DiffOp {
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
		return append(ops, DiffOp{Op: "add", Path: "", Value: canonicalJSON(a)})
	case a == nil:
		return append(ops, DiffOp{Op: "remove", Path: "", Old: canonicalJSON(b)})
	}
	return diffValues(ops, "", "", b, a)
}

// decodeForDiff decodes a spec; ok is false for bytes that are not JSON.
func decodeForDiff(raw json.RawMessage) (v any, ok bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// An elementIdentity names an array element: two elements with the same
// identity are the same element, changed or not. ok is false for an
// element that has no identity (not of the shape the array holds).
type elementIdentity func(element any) (id string, ok bool)

// identityArrays are the arrays of the specs whose elements have an
// identity (§13), by their shape: the pointer to the array with every
// array index written as "*".
var identityArrays = map[string]elementIdentity{
	"/allowed_identifiers": stringIdentity,
	"/callback_urls":       stringIdentity,
	"/connections":         stringIdentity,
	"/oidc/scopes":         stringIdentity,
	"/api_grants/*/scopes": stringIdentity,
	"/scopes":              membersIdentity("value"),
	"/permissions":         membersIdentity("api", "scope"),
	"/api_grants":          membersIdentity("api"),
}

func stringIdentity(element any) (string, bool) {
	s, ok := element.(string)
	return s, ok
}

// membersIdentity identifies an object element by the string members
// named.
func membersIdentity(members ...string) elementIdentity {
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
		return string(canonicalJSON(values)), true
	}
}

// diffValues appends the operations from before to after at path; shape is
// path with every array index written as "*".
func diffValues(ops []DiffOp, path, shape string, before, after any) []DiffOp {
	if id, ok := identityArrays[shape]; ok {
		bl, bIsList := before.([]any)
		al, aIsList := after.([]any)
		if bIsList && aIsList {
			return diffArray(ops, path, shape, bl, al, id)
		}
	}
	bo, bIsObj := before.(map[string]any)
	ao, aIsObj := after.(map[string]any)
	if !bIsObj || !aIsObj {
		if !reflect.DeepEqual(before, after) {
			ops = append(ops, DiffOp{Op: "replace", Path: path, Old: canonicalJSON(before), Value: canonicalJSON(after)})
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
			ops = append(ops, DiffOp{Op: "remove", Path: p, Old: canonicalJSON(bv)})
		case !inB:
			ops = append(ops, DiffOp{Op: "add", Path: p, Value: canonicalJSON(av)})
		default:
			ops = diffValues(ops, p, shape+"/"+PointerEscape(k), bv, av)
		}
	}
	return ops
}

// diffArray compares two arrays whose elements have an identity, in the
// order of §13, so that the operations applied in order give after: first
// a remove of every element that disappears, at its index in before,
// highest first; then the changes inside every element both keep, at its
// index once the removals are done; then an add of every element that
// appears, at its index in after, lowest first. When the kept elements are
// in another order in after, or an element has no identity, or an identity
// repeats within one array (validation refuses duplicates in every one of
// these arrays, so only a spec stored unvalidated could hold one), the
// whole array is one replace.
func diffArray(ops []DiffOp, path, shape string, before, after []any, identity elementIdentity) []DiffOp {
	replace := func() []DiffOp {
		if reflect.DeepEqual(before, after) {
			return ops
		}
		return append(ops, DiffOp{Op: "replace", Path: path, Old: canonicalJSON(before), Value: canonicalJSON(after)})
	}
	bIDs, bIndex, ok := identities(before, identity)
	if !ok {
		return replace()
	}
	aIDs, aIndex, ok := identities(after, identity)
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
			ops = append(ops, DiffOp{Op: "remove", Path: path + "/" + strconv.Itoa(i), Old: canonicalJSON(before[i])})
		}
	}
	for i, id := range keptBefore {
		ops = diffValues(ops, path+"/"+strconv.Itoa(i), shape+"/*", before[bIndex[id]], after[aIndex[id]])
	}
	for i, id := range aIDs {
		if _, kept := bIndex[id]; !kept {
			ops = append(ops, DiffOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: canonicalJSON(after[i])})
		}
	}
	return ops
}

// identities returns the identity of every element and the index of every
// identity; ok is false when an element has none or an identity repeats.
func identities(list []any, identity elementIdentity) (ids []string, index map[string]int, ok bool) {
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
