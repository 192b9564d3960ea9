package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ExpectedVersion is one member of the versions of a plan request (§13):
// the version at which the request expects a resource, as the export it
// was edited from listed it.
type ExpectedVersion struct {
	Kind    Kind
	Key     string
	Version int
}

// DecodeVersions strictly decodes the versions member of a plan request,
// an object of "<kind>/<key>" names to positive integers, as an export
// writes it; base is its pointer ("/versions"). Every member that is not
// the name of a resource of a known kind, every value that is not a
// positive integer and every repeated member is a 400-class problem
// (malformed_request, at the member). null is no versions.
func DecodeVersions(raw json.RawMessage, base string) ([]ExpectedVersion, []FieldError) {
	if string(raw) == "null" {
		return nil, nil
	}
	tree, bad, ok := parseStrict(raw, base)
	if !ok {
		return nil, bad
	}
	obj, isObj := tree.(*jsonObject)
	if !isObj {
		return nil, append(bad, wrongType(base, "an object mapping <kind>/<key> to versions"))
	}
	var out []ExpectedVersion
	for _, name := range obj.keys {
		ptr := base + "/" + EscapeToken(name)
		kind, key, ok := parseResourceName(name)
		if !ok {
			bad = append(bad, FieldError{Pointer: ptr, Code: CodeMalformedRequest,
				Detail: fmt.Sprintf("%s is not <kind>/<key> of a resource of a known kind", QuoteShort(name))})
			continue
		}
		n, isNumber := obj.vals[name].(json.Number)
		v, err := strconv.ParseInt(n.String(), 10, 32)
		if !isNumber || err != nil || v < 1 {
			bad = append(bad, FieldError{Pointer: ptr, Code: CodeMalformedRequest,
				Detail: "The version must be a positive integer."})
			continue
		}
		out = append(out, ExpectedVersion{Kind: kind, Key: key, Version: int(v)})
	}
	return out, bad
}

// parseResourceName reads "<kind>/<key>": a known kind and a key of its
// form ("default" for a singleton).
func parseResourceName(name string) (Kind, string, bool) {
	k, key, ok := strings.Cut(name, "/")
	if !ok {
		return "", "", false
	}
	info, known := LookupKind(Kind(k))
	switch {
	case !known:
		return "", "", false
	case info.Singleton:
		return info.Kind, key, key == SingletonKey
	}
	return info.Kind, key, keyPattern.MatchString(key)
}
