package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Revert undoes a diff: from the spec a diff led to (nil: absent) and the
// diff, it returns the spec the diff started from (nil: absent). It applies
// the inverse of every operation, last first, with RFC 6902 semantics: an
// add is removed, a remove adds its old value back, a replace puts its old
// value back. Every replace and remove that Diff makes carries old, so the
// result is exact; ok is false when an operation has no old (a plan stored
// before old was recorded) or does not apply to the spec.
func Revert(after json.RawMessage, ops []DiffOp) (before json.RawMessage, ok bool) {
	doc, ok := decodeForDiff(after)
	if !ok {
		return nil, false
	}
	for i := len(ops) - 1; i >= 0; i-- {
		op := ops[i]
		tokens, err := SplitPointer(op.Path)
		if err != nil {
			return nil, false
		}
		var inverse string
		var value any
		switch op.Op {
		case "add":
			inverse = "remove"
		case "remove", "replace":
			if len(op.Old) == 0 {
				return nil, false
			}
			if value, ok = decodeForDiff(op.Old); !ok {
				return nil, false
			}
			inverse = "add"
			if op.Op == "replace" {
				inverse = "replace"
			}
		default:
			return nil, false
		}
		if doc, err = patchAt(doc, tokens, inverse, value); err != nil {
			return nil, false
		}
	}
	if doc == nil {
		return nil, true
	}
	return CanonicalJSON(doc), true
}

// SplitPointer splits an RFC 6901 pointer into its unescaped tokens; ""
// is the whole document (no token).
func SplitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("pointer %q does not start with /", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// patchAt applies one operation (add, remove or replace, with RFC 6902
// semantics) at the location tokens inside v, and returns the new value;
// nil is an absent document.
func patchAt(v any, tokens []string, op string, value any) (any, error) {
	if len(tokens) == 0 {
		if op == "remove" {
			return nil, nil
		}
		if op == "replace" && v == nil {
			return nil, fmt.Errorf("replace of an absent document")
		}
		return value, nil
	}
	tok, last := tokens[0], len(tokens) == 1
	switch c := v.(type) {
	case map[string]any:
		child, exists := c[tok]
		if !last {
			if !exists {
				return nil, fmt.Errorf("no member %q", tok)
			}
			nv, err := patchAt(child, tokens[1:], op, value)
			if err != nil {
				return nil, err
			}
			c[tok] = nv
			return c, nil
		}
		switch {
		case op == "add":
			c[tok] = value
		case !exists:
			return nil, fmt.Errorf("%s of the missing member %q", op, tok)
		case op == "replace":
			c[tok] = value
		default:
			delete(c, tok)
		}
		return c, nil
	case []any:
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || strconv.Itoa(i) != tok {
			return nil, fmt.Errorf("index %q", tok)
		}
		if last && op == "add" {
			if i > len(c) {
				return nil, fmt.Errorf("add at index %d of a list of %d", i, len(c))
			}
			return slices.Insert(c, i, value), nil
		}
		if i >= len(c) {
			return nil, fmt.Errorf("index %d of a list of %d", i, len(c))
		}
		switch {
		case !last:
			nv, err := patchAt(c[i], tokens[1:], op, value)
			if err != nil {
				return nil, err
			}
			c[i] = nv
			return c, nil
		case op == "replace":
			c[i] = value
			return c, nil
		default:
			return slices.Delete(c, i, i+1), nil
		}
	}
	return nil, fmt.Errorf("%q inside a value that is neither an object nor a list", tok)
}
