package plans

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/keenauth/configplans/canonjson"
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

// appendDiffOp appends the JSON of op as its MarshalJSON writes it, with
// old and value copied as they are (valid JSON, as Diff makes them) and
// strings not HTML-escaped.
func appendDiffOp(b []byte, op DiffOp) []byte {
	b = append(b, `{"op":`...)
	b = canonjson.AppendString(b, op.Op)
	b = append(b, `,"path":`...)
	b = canonjson.AppendString(b, op.Path)
	if op.Op != "add" && len(op.Old) > 0 {
		b = append(b, `,"old":`...)
		b = append(b, op.Old...)
	}
	if op.Op != "remove" {
		b = append(b, `,"value":`...)
		b = appendRaw(b, op.Value)
	}
	return append(b, '}')
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
//
// Both specs are compared in their canonical form (canonjson), in which
// equal values are equal bytes: the walk compares slices of the two specs
// and never decodes them into values, and the values of the operations are
// slices of the canonical specs.
func Diff(before, after json.RawMessage) []DiffOp {
	if len(before) > 0 && bytes.Equal(before, after) {
		return []DiffOp{} // the same bytes hold the same value
	}
	b, bOK := canonicalForDiff(before)
	a, aOK := canonicalForDiff(after)
	if b == nil && a == nil {
		ops := []DiffOp{}
		if (!bOK || !aOK) && !bytes.Equal(bytes.TrimSpace(before), bytes.TrimSpace(after)) {
			// Bytes that are not JSON have no value to name as old.
			ops = append(ops, DiffOp{Op: "replace", Path: "", Old: json.RawMessage("null"), Value: after})
		}
		return ops
	}
	return diffCanonical(b, a)
}

// diffCanonical is Diff of two specs in canonical form, nil for an absent
// one.
func diffCanonical(before, after []byte) []DiffOp {
	ops := []DiffOp{}
	switch {
	case before == nil && after == nil:
		return ops
	case before == nil:
		return append(ops, DiffOp{Op: "add", Path: "", Value: after})
	case after == nil:
		return append(ops, DiffOp{Op: "remove", Path: "", Old: before})
	}
	return diffValues(ops, "", "", before, after)
}

// canonicalForDiff is a spec in canonical form, nil for an absent one (no
// bytes, or JSON null); ok is false for bytes that are not JSON, which
// encoding/json decides when the scan of canonjson cannot.
func canonicalForDiff(raw json.RawMessage) (_ []byte, ok bool) {
	switch {
	case canonjson.IsCanonical(raw):
	case len(bytes.TrimSpace(raw)) == 0:
		return nil, true
	default:
		out, ok := canonjson.Append(make([]byte, 0, len(raw)), raw)
		if !ok {
			v, ok := decodeForDiff(raw)
			if !ok || v == nil {
				return nil, ok
			}
			out = canonicalJSON(v)
		}
		raw = out
	}
	if string(raw) == "null" {
		return nil, true
	}
	return raw[:len(raw):len(raw)], true
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

// An elementIdentity names an array element (canonical JSON): two elements
// with the same identity are the same element, changed or not. ok is false
// for an element that has no identity (not of the shape the array holds).
type elementIdentity func(element []byte) (id string, ok bool)

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

// stringIdentity identifies a string by its canonical token, which is one
// per string.
func stringIdentity(element []byte) (string, bool) {
	if element[0] != '"' {
		return "", false
	}
	return string(element), true
}

// membersIdentity identifies an object element by the string members
// named: their canonical tokens one after the other, which a string's
// closing quote keeps apart.
func membersIdentity(members ...string) elementIdentity {
	return func(element []byte) (string, bool) {
		if element[0] != '{' {
			return "", false
		}
		if len(members) == 1 {
			v := memberValue(element, members[0])
			if v == nil || v[0] != '"' {
				return "", false
			}
			return string(v), true
		}
		var id []byte
		for _, m := range members {
			v := memberValue(element, m)
			if v == nil || v[0] != '"' {
				return "", false
			}
			id = append(id, v...)
		}
		return string(id), true
	}
}

// diffValues appends the operations from before to after (canonical JSON)
// at path; shape is path with every array index written as "*".
func diffValues(ops []DiffOp, path, shape string, before, after []byte) []DiffOp {
	if bytes.Equal(before, after) {
		return ops
	}
	if id, ok := identityArrays[shape]; ok && before[0] == '[' && after[0] == '[' {
		return diffArray(ops, path, shape, arrayElements(before), arrayElements(after), before, after, id)
	}
	if before[0] != '{' || after[0] != '{' {
		return append(ops, DiffOp{Op: "replace", Path: path, Old: before, Value: after})
	}
	// Both member lists are sorted by name: a merge visits the names of
	// either in sorted order.
	bi, bName, bv := nextMember(before, 1)
	ai, aName, av := nextMember(after, 1)
	for bName != nil || aName != nil {
		var c int
		switch {
		case aName == nil:
			c = -1
		case bName == nil:
			c = 1
		default:
			c = bytes.Compare(bName, aName)
		}
		switch {
		case c < 0:
			ops = append(ops, DiffOp{Op: "remove", Path: path + "/" + PointerEscape(string(bName)), Old: bv})
			bi, bName, bv = nextMember(before, bi)
		case c > 0:
			ops = append(ops, DiffOp{Op: "add", Path: path + "/" + PointerEscape(string(aName)), Value: av})
			ai, aName, av = nextMember(after, ai)
		default:
			if !bytes.Equal(bv, av) {
				k := PointerEscape(string(bName))
				ops = diffValues(ops, path+"/"+k, shape+"/"+k, bv, av)
			}
			bi, bName, bv = nextMember(before, bi)
			ai, aName, av = nextMember(after, ai)
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
// whole array is one replace. wholeBefore and wholeAfter are the arrays.
func diffArray(ops []DiffOp, path, shape string, before, after [][]byte, wholeBefore, wholeAfter []byte, identity elementIdentity) []DiffOp {
	replace := func() []DiffOp {
		return append(ops, DiffOp{Op: "replace", Path: path, Old: wholeBefore, Value: wholeAfter})
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
		if aIndex.find(id) >= 0 {
			keptBefore = append(keptBefore, id)
		}
	}
	for _, id := range aIDs {
		if bIndex.find(id) >= 0 {
			keptAfter = append(keptAfter, id)
		}
	}
	if !slices.Equal(keptBefore, keptAfter) {
		return replace()
	}
	for i := len(before) - 1; i >= 0; i-- {
		if aIndex.find(bIDs[i]) < 0 {
			ops = append(ops, DiffOp{Op: "remove", Path: path + "/" + strconv.Itoa(i), Old: before[i]})
		}
	}
	for i, id := range keptBefore {
		if b, a := before[bIndex.find(id)], after[aIndex.find(id)]; !bytes.Equal(b, a) {
			ops = diffValues(ops, path+"/"+strconv.Itoa(i), shape+"/*", b, a)
		}
	}
	for i, id := range aIDs {
		if bIndex.find(id) < 0 {
			ops = append(ops, DiffOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: after[i]})
		}
	}
	return ops
}

// identities returns the identity of every element and their index; ok
// is false when an element has none or an identity repeats.
func identities(list [][]byte, identity elementIdentity) (ids []string, index idIndex, ok bool) {
	ids = make([]string, 0, len(list))
	if len(list) > smallIndex {
		index.m = make(map[string]int, len(list))
	}
	for i, e := range list {
		id, ok := identity(e)
		if !ok || index.find(id) >= 0 {
			return nil, idIndex{}, false
		}
		ids = append(ids, id)
		index.ids = ids
		if index.m != nil {
			index.m[id] = i
		}
	}
	return ids, index, true
}

// smallIndex is the longest list whose identities are found by a scan
// rather than a map.
const smallIndex = 16

// idIndex finds an identity among the elements of a list.
type idIndex struct {
	ids []string
	m   map[string]int // for a list longer than smallIndex
}

// find returns the index of the element of identity id, -1 for none.
func (x idIndex) find(id string) int {
	if x.m != nil {
		if i, ok := x.m[id]; ok {
			return i
		}
		return -1
	}
	for i, v := range x.ids {
		if v == id {
			return i
		}
	}
	return -1
}

// nextMember reads the member of the canonical object obj at obj[i] (just
// after its '{' or a ','): its name, decoded, its value and where the next
// one starts. name is nil after the last member.
func nextMember(obj []byte, i int) (next int, name, value []byte) {
	if obj[i] == '}' {
		return i, nil, nil
	}
	end := skipCanonical(obj, i)
	name = obj[i+1 : end-1 : end-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		var s string
		_ = json.Unmarshal(obj[i:end], &s) // a canonical token decodes
		name = []byte(s)
	}
	vEnd := skipCanonical(obj, end+1)
	value = obj[end+1 : vEnd : vEnd]
	if next = vEnd; obj[next] == ',' {
		next++
	}
	return next, name, value
}

// memberValue is the value of the member named name of the canonical
// object obj, nil for none.
func memberValue(obj []byte, name string) []byte {
	for i, n, v := nextMember(obj, 1); n != nil; i, n, v = nextMember(obj, i) {
		if string(n) == name {
			return v
		}
	}
	return nil
}

// arrayElements splits a canonical array into its elements.
func arrayElements(arr []byte) [][]byte {
	var out [][]byte
	for i := 1; arr[i] != ']'; {
		end := skipCanonical(arr, i)
		out = append(out, arr[i:end:end])
		if i = end; arr[i] == ',' {
			i++
		}
	}
	return out
}

// skipCanonical returns the end of the canonical value at b[i].
func skipCanonical(b []byte, i int) int {
	switch b[i] {
	case '"':
		// The closing quote is the first one after no backslash or an
		// even number of them.
		for j := i + 1; ; {
			q := j + bytes.IndexByte(b[j:], '"')
			n := 0
			for b[q-1-n] == '\\' {
				n++
			}
			if n%2 == 0 {
				return q + 1
			}
			j = q + 1
		}
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipCanonical(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return i
	}
}
