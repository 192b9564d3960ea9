package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
)

// The bodies of plan creation and apply are parsed here, at the edge: the
// domain receives a plans.PlanRequest or a plans.ApplyRequest. A 400-class
// problem (not JSON, a member of the wrong type, an unknown member) is
// answered before the domain runs. (The internal endpoints' bodies are
// decoded by plans.DecodeTokenActivity and the policies' PUT, whose 404 for
// a malformed environment id comes before its body's 400.)

// ParsePlanRequest strictly decodes a plan-creation body. A 400-class
// problem (not JSON, wrong types, unknown fields) is returned as an *Error.
func ParsePlanRequest(body []byte) (*plans.PlanRequest, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &config.Error{Code: config.CodeMalformedRequest, Detail: "the request body must be a JSON object"}
	}
	var top map[string]json.RawMessage
	if err := config.StrictObject(body, &top); err != nil {
		return nil, err
	}
	// Every 400-class problem is reported: unknown members, a prune that is
	// not a boolean, those of the versions and those of the document.
	var bad []config.FieldError
	for k := range top {
		if k != "config" && k != "prune" && k != "versions" && k != "$schema" {
			bad = append(bad, config.FieldError{Pointer: config.Pointer(k), Code: config.CodeUnknownField, Detail: "unknown field " + config.QuoteShort(k)})
		}
	}
	// "$schema" lets an editor find the schema of the body (§14); it is
	// ignored, but it is a string.
	if raw, ok := top["$schema"]; ok {
		var ref string
		if err := json.Unmarshal(raw, &ref); err != nil {
			bad = append(bad, config.FieldError{Pointer: "/$schema", Code: config.CodeMalformedRequest, Detail: "$schema must be a string"})
		}
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].Pointer < bad[j].Pointer })
	pr := &plans.PlanRequest{}
	if raw, ok := top["prune"]; ok {
		if err := json.Unmarshal(raw, &pr.Prune); err != nil {
			bad = append(bad, config.FieldError{Pointer: "/prune", Code: config.CodeMalformedRequest, Detail: "prune must be a boolean"})
		}
	}
	if raw, ok := top["versions"]; ok {
		var problems []config.FieldError
		pr.Versions, problems = config.DecodeVersions(raw, "/versions")
		bad = append(bad, problems...)
	}
	raw, ok := top["config"]
	if !ok || string(raw) == "null" {
		pr.Problems = []config.FieldError{{Pointer: "/config", Code: config.CodeRequired, Detail: "config is required"}}
		pr.Doc = &config.Document{Entries: map[config.Kind][]config.Entry{}}
	} else {
		doc, problems, err := config.DecodeDocument(raw, "/config")
		var de *config.Error
		switch {
		case errors.As(err, &de) && (de.Code == config.CodeMalformedRequest || de.Code == config.CodeUnknownField):
			bad = append(bad, de.Errors...)
		case err != nil:
			return nil, err
		}
		pr.Doc, pr.Problems, pr.DocumentBytes = doc, problems, len(raw)
	}
	if len(bad) > 0 {
		code := config.CodeUnknownField
		for _, p := range bad {
			if p.Code != config.CodeUnknownField {
				code = config.CodeMalformedRequest
			}
		}
		return nil, config.Problems(code, bad)
	}
	return pr, nil
}

// ParseApplyRequest strictly decodes an apply body; an empty body is {}.
func ParseApplyRequest(body []byte) (*plans.ApplyRequest, error) {
	req := &plans.ApplyRequest{}
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	var top map[string]json.RawMessage
	if err := config.StrictObject(body, &top); err != nil {
		return nil, err
	}
	var unknown []config.FieldError
	for k := range top {
		switch k {
		case "resolved_secrets", "confirm_deletions", "sp_host":
		default:
			unknown = append(unknown, config.FieldError{Pointer: config.Pointer(k), Code: config.CodeUnknownField, Detail: "unknown field " + config.QuoteShort(k)})
		}
	}
	if len(unknown) > 0 {
		sort.Slice(unknown, func(i, j int) bool { return unknown[i].Pointer < unknown[j].Pointer })
		return nil, &config.Error{Code: config.CodeUnknownField, Detail: "the request has unknown fields", Errors: unknown}
	}
	var bad []config.FieldError
	if raw, ok := top["resolved_secrets"]; ok && string(raw) != "null" {
		names, err := objectKeys(raw)
		if err != nil {
			bad = append(bad, config.FieldError{Pointer: "/resolved_secrets", Code: config.CodeMalformedRequest, Detail: "resolved_secrets must be an object of names to strings"})
		} else {
			_ = json.Unmarshal(raw, &req.ResolvedSecrets)
			req.SecretNames = names
		}
	}
	if raw, ok := top["confirm_deletions"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &req.ConfirmDeletions); err != nil || req.ConfirmDeletions == nil {
			bad = append(bad, config.FieldError{Pointer: "/confirm_deletions", Code: config.CodeMalformedRequest, Detail: "confirm_deletions must be a list of strings"})
		}
	}
	if raw, ok := top["sp_host"]; ok && string(raw) != "null" {
		var h string
		if err := json.Unmarshal(raw, &h); err != nil {
			bad = append(bad, config.FieldError{Pointer: "/sp_host", Code: config.CodeMalformedRequest, Detail: "sp_host must be a string"})
		} else {
			req.SPHost = &h
		}
	}
	if len(bad) > 0 {
		return nil, &config.Error{Code: config.CodeMalformedRequest, Detail: "the request body has values of the wrong type", Errors: bad}
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
