package config

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

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

// AppendDiffOp appends the JSON of op as its MarshalJSON writes it, with
// old and value copied as they are (valid JSON, as Diff makes them) and
// strings not HTML-escaped.
func AppendDiffOp(b []byte, op DiffOp) []byte {
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
		b = canonjson.AppendRaw(b, op.Value)
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
	b, bOK := CanonicalForDiff(before)
	a, aOK := CanonicalForDiff(after)
	if b == nil && a == nil {
		ops := []DiffOp{}
		if (!bOK || !aOK) && !bytes.Equal(bytes.TrimSpace(before), bytes.TrimSpace(after)) {
			// Bytes that are not JSON have no value to name as old.
			ops = append(ops, DiffOp{Op: "replace", Path: "", Old: json.RawMessage("null"), Value: after})
		}
		return ops
	}
	return DiffCanonical(b, a)
}

// DiffCanonical is Diff of two specs in canonical form, nil for an absent
// one.
func DiffCanonical(before, after []byte) []DiffOp {
	return AppendDiffCanonical([]DiffOp{}, before, after)
}

// AppendDiffCanonical appends the operations of DiffCanonical to ops: a
// caller that diffs many specs keeps them in one list, of which each
// diff's operations are a part.
func AppendDiffCanonical(ops []DiffOp, before, after []byte) []DiffOp {
	switch {
	case before == nil && after == nil:
		return ops
	case before == nil:
		return append(ops, DiffOp{Op: "add", Path: "", Value: after})
	case after == nil:
		return append(ops, DiffOp{Op: "remove", Path: "", Old: before})
	}
	// The pointers are written in one buffer, a member or an index more
	// for each level the walk enters; an operation's path is a string of
	// it, the only one made.
	var path [128]byte
	return diffValues(ops, path[:0], shapes, before, after)
}

// CanonicalForDiff is a spec in canonical form, nil for an absent one (no
// bytes, or JSON null); ok is false for bytes that are not JSON, which
// encoding/json decides when the scan of canonjson cannot.
func CanonicalForDiff(raw json.RawMessage) (_ []byte, ok bool) {
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
			out = CanonicalJSON(v)
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

// An elementID is the identity of an array element: the canonical tokens
// of up to two string members (one for a string element), compared as
// slices of the element, so that naming an element allocates nothing. Two
// pairs of string tokens are equal when the tokens are: a token begins and
// ends with its quote and holds no bare one, so the pair is as exact a name
// as the tokens written one after the other.
type elementID [2][]byte

func (x elementID) equal(y elementID) bool {
	return bytes.Equal(x[0], y[0]) && bytes.Equal(x[1], y[1])
}

// An elementIdentity reads the array element (canonical JSON) at arr[i]:
// where it ends and its identity, two elements with the same identity
// being the same element, changed or not. ok is false for an element that
// has no identity (not of the shape the array holds), and end is then not
// set. Reading the end and the identity together reads an element once.
type elementIdentity func(arr []byte, i int) (end int, id elementID, ok bool)

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

// A shapeNode is a shape of identityArrays or a prefix of one: the walk
// follows the tree by the escaped names of the members it enters ("*" for
// an array element, as in the shapes) instead of writing the shape of every
// value it visits. A value whose shape is no prefix has a nil node, and
// nothing under it is an identity array.
type shapeNode struct {
	identity elementIdentity // nil: no identity array has this shape
	next     map[string]*shapeNode
}

// child is the node of the member named name of n's value ("*" for its
// elements). A name that escaping changes (one with '~' or '/') is in no
// shape.
func (n *shapeNode) child(name []byte) *shapeNode {
	if n == nil || needsEscape(name) {
		return nil
	}
	return n.next[string(name)]
}

// shapes is the tree of identityArrays, rooted at the shape "" of a spec.
var shapes = func() *shapeNode {
	root := &shapeNode{}
	for shape, id := range identityArrays {
		n := root
		for _, k := range strings.Split(shape, "/")[1:] {
			if n.next == nil {
				n.next = map[string]*shapeNode{}
			}
			if n.next[k] == nil {
				n.next[k] = &shapeNode{}
			}
			n = n.next[k]
		}
		n.identity = id
	}
	return root
}()

// stringIdentity identifies a string by its canonical token, which is one
// per string.
func stringIdentity(arr []byte, i int) (int, elementID, bool) {
	if arr[i] != '"' {
		return 0, elementID{}, false
	}
	end, _ := canonjson.SkipString(arr, i)
	return end, elementID{arr[i:end:end]}, true
}

// membersIdentity identifies an object element by the string members
// named (one or two): their canonical tokens.
func membersIdentity(members ...string) elementIdentity {
	if len(members) < 1 || len(members) > len(elementID{}) {
		panic("plans: an element identity is one or two members")
	}
	return func(arr []byte, i int) (int, elementID, bool) {
		var id elementID
		if arr[i] != '{' {
			return 0, id, false
		}
		// A canonical object names a member once.
		j, name, value := nextMember(arr, i+1)
		for ; name != nil; j, name, value = nextMember(arr, j) {
			for k, m := range members {
				if string(name) == m {
					id[k] = value
				}
			}
		}
		for k := range members {
			if id[k] == nil || id[k][0] != '"' {
				return 0, elementID{}, false
			}
		}
		return j + 1, id, true // j is at the object's '}'
	}
}

// diffValues appends the operations from before to after (canonical JSON)
// at path; shape is the node of path's shape (nil for a shape under which
// no array has identities). The walk appends to path the pointers of the
// values it enters: the bytes after len(path) are its own.
func diffValues(ops []DiffOp, path []byte, shape *shapeNode, before, after []byte) []DiffOp {
	if bytes.Equal(before, after) {
		return ops
	}
	if shape != nil && shape.identity != nil && before[0] == '[' && after[0] == '[' {
		return diffArray(ops, path, shape, before, after)
	}
	if before[0] != '{' || after[0] != '{' {
		return append(ops, DiffOp{Op: "replace", Path: string(path), Old: before, Value: after})
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
			ops = append(ops, DiffOp{Op: "remove", Path: string(childPath(path, bName)), Old: bv})
			bi, bName, bv = nextMember(before, bi)
		case c > 0:
			ops = append(ops, DiffOp{Op: "add", Path: string(childPath(path, aName)), Value: av})
			ai, aName, av = nextMember(after, ai)
		default:
			if !bytes.Equal(bv, av) {
				ops = diffValues(ops, childPath(path, bName), shape.child(bName), bv, av)
			}
			bi, bName, bv = nextMember(before, bi)
			ai, aName, av = nextMember(after, ai)
		}
	}
	return ops
}

// childPath appends to path the pointer to the member named name of the
// value at path.
func childPath(path []byte, name []byte) []byte {
	path = append(path, '/')
	if needsEscape(name) {
		return append(path, PointerEscape(string(name))...)
	}
	return append(path, name...)
}

// indexPath appends to path the pointer to the element i of the array at
// path.
func indexPath(path []byte, i int) []byte {
	return strconv.AppendInt(append(path, '/'), int64(i), 10)
}

// needsEscape reports whether PointerEscape changes name.
func needsEscape(name []byte) bool {
	return bytes.IndexByte(name, '~') >= 0 || bytes.IndexByte(name, '/') >= 0
}

// An element is an element of an array whose elements have an identity:
// its bytes, its identity and whether the other array has an element of
// the same identity (kept).
type element struct {
	value []byte
	id    elementID
	kept  bool
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
// whole array is one replace. shape is the array's node.
//
// The elements of arrays of up to smallIndex elements (every array of a
// valid spec but a long list of scopes or callback URLs) are kept on the
// stack and found by a scan, so that comparing them allocates nothing.
func diffArray(ops []DiffOp, path []byte, shape *shapeNode, before, after []byte) []DiffOp {
	replace := func() []DiffOp {
		return append(ops, DiffOp{Op: "replace", Path: string(path), Old: before, Value: after})
	}
	var bBuf, aBuf [smallIndex]element
	bs, bIndex, ok := identities(bBuf[:0], before, shape.identity)
	if !ok {
		return replace()
	}
	as, aIndex, ok := identities(aBuf[:0], after, shape.identity)
	if !ok {
		return replace()
	}
	for i := range bs {
		bs[i].kept = aIndex.find(as, bs[i].id) >= 0
	}
	for i := range as {
		as[i].kept = bIndex.find(bs, as[i].id) >= 0
	}
	// The kept elements, in the order of before and in that of after, must
	// be the same list: the n-th kept of one is then the n-th of the other.
	for i, j := 0, 0; ; i, j = i+1, j+1 {
		i, j = nextKept(bs, i), nextKept(as, j)
		if i == len(bs) || j == len(as) {
			if i != len(bs) || j != len(as) {
				return replace()
			}
			break
		}
		if !bs[i].id.equal(as[j].id) {
			return replace()
		}
	}
	for i := len(bs) - 1; i >= 0; i-- {
		if !bs[i].kept {
			ops = append(ops, DiffOp{Op: "remove", Path: string(indexPath(path, i)), Old: bs[i].value})
		}
	}
	elements := shape.child([]byte("*"))
	for n, i, j := 0, nextKept(bs, 0), nextKept(as, 0); i < len(bs); n, i, j = n+1, nextKept(bs, i+1), nextKept(as, j+1) {
		if b, a := bs[i].value, as[j].value; !bytes.Equal(b, a) {
			ops = diffValues(ops, indexPath(path, n), elements, b, a)
		}
	}
	for i := range as {
		if !as[i].kept {
			ops = append(ops, DiffOp{Op: "add", Path: string(indexPath(path, i)), Value: as[i].value})
		}
	}
	return ops
}

// nextKept is the index of the first kept element of list at or after i,
// len(list) for none.
func nextKept(list []element, i int) int {
	for i < len(list) && !list[i].kept {
		i++
	}
	return i
}

// identities appends the elements of the canonical array arr to list with
// their identity, and returns their index; ok is false when an element has
// none or an identity repeats.
func identities(list []element, arr []byte, identity elementIdentity) (_ []element, index idIndex, ok bool) {
	for i := 1; arr[i] != ']'; {
		end, id, ok := identity(arr, i)
		if !ok {
			return nil, idIndex{}, false
		}
		list = append(list, element{value: arr[i:end:end], id: id})
		if i = end; arr[i] == ',' {
			i++
		}
	}
	if len(list) > smallIndex {
		index.m = make(map[string]int, len(list))
		for i, e := range list {
			k := string(e.id[0]) + string(e.id[1])
			if _, dup := index.m[k]; dup {
				return nil, idIndex{}, false
			}
			index.m[k] = i
		}
		return list, index, true
	}
	for i := range list {
		for j := range i {
			if list[i].id.equal(list[j].id) {
				return nil, idIndex{}, false
			}
		}
	}
	return list, index, true
}

// smallIndex is the longest list whose identities are found by a scan
// rather than a map.
const smallIndex = 16

// idIndex finds an identity among the elements of a list: by a map for a
// list longer than smallIndex, else by a scan of the list.
type idIndex struct {
	m map[string]int // identity's tokens one after the other → index
}

// find returns the index in list (the one index was made for) of the
// element of identity id, -1 for none.
func (x idIndex) find(list []element, id elementID) int {
	if x.m != nil {
		if i, ok := x.m[string(id[0])+string(id[1])]; ok {
			return i
		}
		return -1
	}
	for i := range list {
		if list[i].id.equal(id) {
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
	end, _ := canonjson.SkipString(obj, i)
	name = obj[i+1 : end-1 : end-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		var s string
		_ = json.Unmarshal(obj[i:end], &s) // a canonical token decodes
		name = []byte(s)
	}
	vEnd, _ := canonjson.SkipValue(obj, end+1)
	value = obj[end+1 : vEnd : vEnd]
	if next = vEnd; obj[next] == ',' {
		next++
	}
	return next, name, value
}
