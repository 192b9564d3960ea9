package plans

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
)

// DiffOp is one RFC 6902-style operation from the current spec to the
// planned one.
type DiffOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// MarshalJSON leaves value out of a remove, and writes it for add and
// replace even when it is JSON null.
func (d DiffOp) MarshalJSON() ([]byte, error) {
	if d.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{d.Op, d.Path})
	}
	value := d.Value
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	return json.Marshal(struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}{d.Op, d.Path, value})
}

// Diff compares two specs; nil (or JSON null) is an absent spec. nil → x is
// one add of the whole spec at "", x → nil one remove at "". Objects are
// compared member by member, recursively, in sorted member order (add,
// remove, replace at escaped paths); arrays and scalars that differ are one
// replace of the whole value. Equal specs give an empty, non-nil slice.
func Diff(before, after json.RawMessage) []DiffOp {
	ops := []DiffOp{}
	b, bOK := decodeForDiff(before)
	a, aOK := decodeForDiff(after)
	switch {
	case b == nil && a == nil:
		if !bOK || !aOK {
			if !bytes.Equal(bytes.TrimSpace(before), bytes.TrimSpace(after)) {
				ops = append(ops, DiffOp{Op: "replace", Path: "", Value: after})
			}
		}
		return ops
	case b == nil:
		return append(ops, DiffOp{Op: "add", Path: "", Value: canonicalJSON(a)})
	case a == nil:
		return append(ops, DiffOp{Op: "remove", Path: ""})
	}
	return diffValues(ops, "", b, a)
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

func diffValues(ops []DiffOp, path string, before, after any) []DiffOp {
	bo, bIsObj := before.(map[string]any)
	ao, aIsObj := after.(map[string]any)
	if !bIsObj || !aIsObj {
		if !reflect.DeepEqual(before, after) {
			ops = append(ops, DiffOp{Op: "replace", Path: path, Value: canonicalJSON(after)})
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
			ops = append(ops, DiffOp{Op: "remove", Path: p})
		case !inB:
			ops = append(ops, DiffOp{Op: "add", Path: p, Value: canonicalJSON(av)})
		default:
			ops = diffValues(ops, p, bv, av)
		}
	}
	return ops
}
