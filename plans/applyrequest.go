package plans

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// ApplyRequest is the body of POST /v1/config-plans/{id}:apply. Secret
// values live here for the length of the request only.
type ApplyRequest struct {
	// ResolvedSecrets keeps the raw JSON values so that a value that is not a
	// string is reported, never echoed.
	ResolvedSecrets  map[string]json.RawMessage
	secretNames      []string // in body order
	ConfirmDeletions []json.RawMessage
	SPHost           *string
}

// Limits of an apply body (§6).
const (
	maxSecretBytes   = 8192
	maxApplyEntries  = 5000
	secretNameFormat = `^KEENAUTH_[A-Z0-9_]+$`
)

var secretName = regexp.MustCompile(secretNameFormat)

// ParseApplyRequest strictly decodes an apply body; an empty body is {}.
func ParseApplyRequest(body []byte) (*ApplyRequest, error) {
	req := &ApplyRequest{}
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	var top map[string]json.RawMessage
	if err := strictObject(body, &top); err != nil {
		return nil, err
	}
	var unknown []FieldError
	for k := range top {
		switch k {
		case "resolved_secrets", "confirm_deletions", "sp_host":
		default:
			unknown = append(unknown, FieldError{Pointer: Pointer(k), Code: CodeUnknownField, Detail: "unknown field " + quoteShort(k)})
		}
	}
	if len(unknown) > 0 {
		sortProblems(unknown)
		return nil, &Error{Code: CodeUnknownField, Detail: "the request has unknown fields", Errors: unknown}
	}
	var bad []FieldError
	if raw, ok := top["resolved_secrets"]; ok && string(raw) != "null" {
		names, err := objectKeys(raw)
		if err != nil {
			bad = append(bad, FieldError{Pointer: "/resolved_secrets", Code: CodeMalformedRequest, Detail: "resolved_secrets must be an object of names to strings"})
		} else {
			_ = json.Unmarshal(raw, &req.ResolvedSecrets)
			req.secretNames = names
		}
	}
	if raw, ok := top["confirm_deletions"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &req.ConfirmDeletions); err != nil || req.ConfirmDeletions == nil {
			bad = append(bad, FieldError{Pointer: "/confirm_deletions", Code: CodeMalformedRequest, Detail: "confirm_deletions must be a list of strings"})
		}
	}
	if raw, ok := top["sp_host"]; ok && string(raw) != "null" {
		var h string
		if err := json.Unmarshal(raw, &h); err != nil {
			bad = append(bad, FieldError{Pointer: "/sp_host", Code: CodeMalformedRequest, Detail: "sp_host must be a string"})
		} else {
			req.SPHost = &h
		}
	}
	if len(bad) > 0 {
		return nil, &Error{Code: CodeMalformedRequest, Detail: "the request body has values of the wrong type", Errors: bad}
	}
	return req, nil
}

// objectKeys returns the member names of a JSON object in order; a repeated
// name is an error (its value would be ambiguous).
func objectKeys(raw json.RawMessage) ([]string, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	t, err := d.Token()
	if err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var names []string
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		name := t.(string)
		if seen[name] {
			return nil, fmt.Errorf("repeated member")
		}
		seen[name] = true
		names = append(names, name)
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// validate checks the body against the plan (row 10): every problem at once.
// It returns the confirmed deletions.
func (req *ApplyRequest) validate(p *Plan) (map[string]bool, []FieldError) {
	var problems []FieldError
	required := map[string]bool{}
	for _, name := range p.RequiredSecrets {
		required[name] = true
	}
	if len(req.secretNames) > maxApplyEntries {
		problems = append(problems, FieldError{Pointer: "/resolved_secrets", Code: CodeTooMany,
			Detail: fmt.Sprintf("at most %d secrets may be sent", maxApplyEntries)})
	} else {
		for _, name := range req.secretNames {
			ptr := Pointer("resolved_secrets", name)
			if !secretName.MatchString(name) {
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeInvalid, Detail: "a secret name is KEENAUTH_ followed by A-Z, 0-9 or _"})
				continue
			}
			if !required[name] {
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeSecretUnused, Detail: "the plan does not need this secret"})
				continue
			}
			var v string
			raw := req.ResolvedSecrets[name]
			switch {
			case json.Unmarshal(raw, &v) != nil:
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeSecretInvalid, Detail: "the value must be a string"})
			case v == "":
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeSecretInvalid, Detail: "the value is empty"})
			case len(v) > maxSecretBytes:
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeSecretInvalid,
					Detail: fmt.Sprintf("the value is over %d bytes", maxSecretBytes)})
			case !utf8.ValidString(v):
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeSecretInvalid, Detail: "the value is not valid UTF-8"})
			}
		}
		for _, name := range p.RequiredSecrets {
			if _, ok := req.ResolvedSecrets[name]; !ok {
				problems = append(problems, FieldError{Pointer: Pointer("resolved_secrets", name), Code: CodeSecretMissing, Detail: "the plan needs this secret"})
			}
		}
	}
	switch {
	case p.RequiresSPHost && req.SPHost == nil:
		problems = append(problems, FieldError{Pointer: "/sp_host", Code: CodeSPHostRequired, Detail: "the plan writes OIDC material: send the environment's service-provider host"})
	case !p.RequiresSPHost && req.SPHost != nil:
		problems = append(problems, FieldError{Pointer: "/sp_host", Code: CodeSPHostUnused, Detail: "the plan writes no OIDC material: do not send sp_host"})
	case req.SPHost != nil && !ValidHost(*req.SPHost):
		problems = append(problems, FieldError{Pointer: "/sp_host", Code: CodeInvalid, Detail: "sp_host must be a lowercase DNS name of two or more labels, without a port"})
	}
	confirmed := map[string]bool{}
	deletions := map[string]bool{}
	for _, c := range p.Changes {
		if c.Action == ActionDelete {
			deletions[resourceRef(c.Kind, c.Key)] = true
		}
	}
	if len(req.ConfirmDeletions) > maxApplyEntries {
		problems = append(problems, FieldError{Pointer: "/confirm_deletions", Code: CodeTooMany,
			Detail: fmt.Sprintf("at most %d deletions may be confirmed", maxApplyEntries)})
	} else {
		for i, raw := range req.ConfirmDeletions {
			ptr := fmt.Sprintf("/confirm_deletions/%d", i)
			var ref string
			if json.Unmarshal(raw, &ref) != nil || !validRef(ref) {
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeInvalid, Detail: "a confirmation is <kind>/<key>, e.g. connection/legacy"})
				continue
			}
			switch {
			case confirmed[ref]:
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeDuplicate, Detail: ref + " is confirmed twice"})
			case !deletions[ref]:
				confirmed[ref] = true
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeNotADeletion, Detail: ref + " is not a deletion of this plan"})
			default:
				confirmed[ref] = true
			}
		}
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Pointer < problems[j].Pointer })
	return confirmed, problems
}

var resourceKey = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

func validRef(ref string) bool {
	kind, key, ok := strings.Cut(ref, "/")
	if !ok {
		return false
	}
	if _, known := LookupKind(Kind(kind)); !known {
		return false
	}
	return resourceKey.MatchString(key)
}

// ValidHost reports whether h is a lowercase DNS name: two or more labels of
// [a-z0-9-], 1–63 characters each, no leading or trailing '-', 253 in all,
// no port.
func ValidHost(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return false
	}
	return !slices.ContainsFunc(labels, func(l string) bool {
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return true
		}
		return strings.IndexFunc(l, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') }) >= 0
	})
}

// secret returns the resolved value of a secret (validated before).
func (req *ApplyRequest) secret(name string) string {
	var v string
	_ = json.Unmarshal(req.ResolvedSecrets[name], &v)
	return v
}
