package plans

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"unicode/utf8"

	"github.com/keenauth/configplans/config"
)

// ApplyRequest is the body of POST /v1/config-plans/{id}:apply. Secret
// values live here for the length of the request only.
type ApplyRequest struct {
	// ResolvedSecrets keeps the raw JSON values so that a value that is not a
	// string is reported, never echoed.
	ResolvedSecrets map[string]json.RawMessage
	// SecretNames are the names of ResolvedSecrets in body order.
	SecretNames      []string
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

// Check checks the body against the plan (row 10): every problem at once.
// It returns the confirmed deletions.
func (req *ApplyRequest) Check(p *Plan) (map[string]bool, []config.FieldError) {
	var problems []config.FieldError
	required := map[string]bool{}
	for _, name := range p.RequiredSecrets {
		required[name] = true
	}
	if len(req.SecretNames) > maxApplyEntries {
		problems = append(problems, config.FieldError{Pointer: "/resolved_secrets", Code: config.CodeTooMany,
			Detail: fmt.Sprintf("at most %d secrets may be sent", maxApplyEntries)})
	} else {
		for _, name := range req.SecretNames {
			ptr := config.Pointer("resolved_secrets", name)
			if !secretName.MatchString(name) {
				problems = append(problems, config.FieldError{Pointer: ptr, Code: config.CodeInvalid, Detail: "a secret name is KEENAUTH_ followed by A-Z, 0-9 or _"})
				continue
			}
			if !required[name] {
				problems = append(problems, config.FieldError{Pointer: ptr, Code: config.CodeSecretUnused, Detail: "the plan does not need this secret"})
				continue
			}
			var v string
			raw := req.ResolvedSecrets[name]
			switch {
			case json.Unmarshal(raw, &v) != nil:
				problems = append(problems, config.FieldError{Pointer: ptr, Code: config.CodeSecretInvalid, Detail: "the value must be a string"})
			case v == "":
				problems = append(problems, config.FieldError{Pointer: ptr, Code: config.CodeSecretInvalid, Detail: "the value is empty"})
			case len(v) > maxSecretBytes:
				problems = append(problems, config.FieldError{Pointer: ptr, Code: config.CodeSecretInvalid,
					Detail: fmt.Sprintf("the value is over %d bytes", maxSecretBytes)})
			case !utf8.ValidString(v):
				problems = append(problems, config.FieldError{Pointer: ptr, Code: config.CodeSecretInvalid, Detail: "the value is not valid UTF-8"})
			}
		}
		for _, name := range p.RequiredSecrets {
			if _, ok := req.ResolvedSecrets[name]; !ok {
				problems = append(problems, config.FieldError{Pointer: config.Pointer("resolved_secrets", name), Code: config.CodeSecretMissing, Detail: "the plan needs this secret"})
			}
		}
	}
	switch {
	case p.RequiresSPHost && req.SPHost == nil:
		problems = append(problems, config.FieldError{Pointer: "/sp_host", Code: config.CodeSPHostRequired, Detail: "the plan writes OIDC material: send the environment's service-provider host"})
	case !p.RequiresSPHost && req.SPHost != nil:
		problems = append(problems, config.FieldError{Pointer: "/sp_host", Code: config.CodeSPHostUnused, Detail: "the plan writes no OIDC material: do not send sp_host"})
	case req.SPHost != nil && !config.ValidHost(*req.SPHost):
		problems = append(problems, config.FieldError{Pointer: "/sp_host", Code: config.CodeInvalid, Detail: "sp_host must be a lowercase DNS name of two or more labels, without a port"})
	}
	confirmed := map[string]bool{}
	deletions := map[string]bool{}
	for _, c := range p.Changes {
		if c.Action == ActionDelete {
			deletions[resourceRef(c.Kind, c.Key)] = true
		}
	}
	if len(req.ConfirmDeletions) > maxApplyEntries {
		problems = append(problems, config.FieldError{Pointer: "/confirm_deletions", Code: config.CodeTooMany,
			Detail: fmt.Sprintf("at most %d deletions may be confirmed", maxApplyEntries)})
	} else {
		for i, raw := range req.ConfirmDeletions {
			ptr := fmt.Sprintf("/confirm_deletions/%d", i)
			var ref string
			if json.Unmarshal(raw, &ref) != nil || !config.ValidRef(ref) {
				problems = append(problems, config.FieldError{Pointer: ptr, Code: config.CodeInvalid, Detail: "a confirmation is <kind>/<key>, e.g. connection/legacy"})
				continue
			}
			switch {
			case confirmed[ref]:
				problems = append(problems, config.FieldError{Pointer: ptr, Code: config.CodeDuplicate, Detail: ref + " is confirmed twice"})
			case !deletions[ref]:
				confirmed[ref] = true
				problems = append(problems, config.FieldError{Pointer: ptr, Code: config.CodeNotADeletion, Detail: ref + " is not a deletion of this plan"})
			default:
				confirmed[ref] = true
			}
		}
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Pointer < problems[j].Pointer })
	return confirmed, problems
}

// Secret returns the resolved value of a secret (checked before).
func (req *ApplyRequest) Secret(name string) string {
	var v string
	_ = json.Unmarshal(req.ResolvedSecrets[name], &v)
	return v
}
