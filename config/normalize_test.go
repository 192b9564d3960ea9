package config

import (
	"encoding/json"
	"fmt"
)

// NormalizeSpec strictly decodes and validates the spec of one resource and
// returns its canonical JSON, so tests can check the spec rules one resource
// at a time (the service always goes through a whole document). Problems come back as an *Error: code
// malformed_request or unknown_field for the shape of the JSON, else
// validation_failed; pointers are relative to the spec ("/oidc/issuer").
// NormalizeSpec of a canonical spec returns the same bytes.
func NormalizeSpec(kind Kind, raw json.RawMessage) (json.RawMessage, error) {
	s, ok := newSpec(kind)
	if !ok {
		return nil, fmt.Errorf("plans: unknown kind %q", kind)
	}
	tree, bad, ok := parseStrict(raw, "")
	if ok {
		if _, isObj := tree.(*jsonObject); !isObj {
			bad = append(bad, wrongType("", "an object"))
		} else {
			bad = append(bad, checkShape(tree, specType(s), "", nil)...)
		}
	}
	if len(bad) > 0 {
		return nil, badRequest(bad)
	}
	if err := unmarshalTree(tree.(*jsonObject), s); err != nil {
		return nil, err
	}
	canon, problems := checkSpec(s, "")
	if len(problems) > 0 {
		return nil, Problems("validation_failed", problems)
	}
	return canon, nil
}

// unmarshalTree decodes a checked object into a typed spec, from its text
// (specText).
func unmarshalTree(tree *jsonObject, s spec) error {
	b, err := specText(tree)
	if err != nil {
		return err
	}
	return unmarshalSpec(b, s)
}
