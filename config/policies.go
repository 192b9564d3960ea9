package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Policies are the environment policies of §11. Every policy is optional;
// the zero value enforces nothing.
type Policies struct {
	RequireHTTPSCallbacks   bool     `json:"require_https_callbacks" nullable:"true"`
	AllowedCallbackHosts    []string `json:"allowed_callback_hosts" nullable:"true"`
	MinPasswordLength       *int     `json:"min_password_length" nullable:"true"`
	ForbidSocialConnections bool     `json:"forbid_social_connections" nullable:"true"`
	MFARequired             bool     `json:"mfa_required" nullable:"true"`
	// RequiredApprovals is how many approvals a plan with a change other
	// than no_op needs before it is applied (§17: 0–5).
	RequiredApprovals int `json:"required_approvals" nullable:"true"`
	// Rules are the guardrail rules of §18.
	Rules []Rule `json:"rules" nullable:"true"`
}

// Policy names, also the problem codes of violations.
const (
	PolicyRequireHTTPSCallbacks   Code = "require_https_callbacks"
	PolicyAllowedCallbackHosts    Code = "allowed_callback_hosts"
	PolicyMinPasswordLength       Code = "min_password_length"
	PolicyForbidSocialConnections Code = "forbid_social_connections"
	PolicyMFARequired             Code = "mfa_required"
)

// defaultMinPasswordLength is the platform's minimum password length, which a
// database connection without min_password_length enforces.
const defaultMinPasswordLength = 8

// hostPatternPattern is a host name, optionally behind "*." : lowercase
// labels of letters, digits and hyphens, 1–63 characters, no hyphen at either
// end.
var hostPatternPattern = regexp.MustCompile(`^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

// DecodePolicies strictly decodes the body of
// PUT /internal/v1/environments/{id}/policies. An unknown member or a value of
// the wrong JSON type gives an *Error (unknown_field, malformed_request); an
// invalid value (min_password_length outside 8–128, a malformed or repeated
// host pattern) is a problem. Absent and null members keep their zero value:
// the PUT replaces the whole policy set. Host patterns are lower-cased, and
// allowed_callback_hosts is never nil.
func DecodePolicies(raw []byte) (Policies, []FieldError, error) {
	var p Policies
	if err := DecodeObject(raw, &p); err != nil {
		return Policies{}, nil, err
	}

	var problems []FieldError
	if n := p.MinPasswordLength; n != nil && (*n < 8 || *n > 128) {
		problems = append(problems, FieldError{Pointer: "/min_password_length", Code: CodeOutOfRange,
			Detail: "min_password_length must be between 8 and 128."})
	}
	if n := p.RequiredApprovals; n < 0 || n > MaxRequiredApprovals {
		problems = append(problems, FieldError{Pointer: "/required_approvals", Code: CodeInvalid,
			Detail: fmt.Sprintf("required_approvals must be between 0 and %d.", MaxRequiredApprovals)})
	}
	problems = append(problems, ruleProblems(p.Rules)...)
	if p.AllowedCallbackHosts == nil {
		p.AllowedCallbackHosts = []string{}
	}
	if n := len(p.AllowedCallbackHosts); n > MaxAllowedCallbackHosts {
		// Each pattern is not looked at: the list is refused whole.
		problems = append(problems, FieldError{Pointer: "/allowed_callback_hosts", Code: CodeTooMany,
			Detail: fmt.Sprintf("allowed_callback_hosts holds %d patterns; at most %d are allowed.", n, MaxAllowedCallbackHosts)})
		return p, problems, nil
	}
	for i, h := range p.AllowedCallbackHosts {
		h = strings.ToLower(h)
		p.AllowedCallbackHosts[i] = h
		if len(h) > 253 || !hostPatternPattern.MatchString(h) {
			problems = append(problems, FieldError{Pointer: fmt.Sprintf("/allowed_callback_hosts/%d", i), Code: CodeInvalid,
				Detail: "A host pattern must be a host name such as portal.shop.example, or *. followed by one."})
		}
	}
	problems = append(problems, DuplicateProblems("/allowed_callback_hosts", "", len(p.AllowedCallbackHosts),
		StringsKey(p.AllowedCallbackHosts))...)
	return p, problems, nil
}

// MaxRequiredApprovals bounds required_approvals (§17).
const MaxRequiredApprovals = 5

// MaxAllowedCallbackHosts bounds allowed_callback_hosts (§23).
const MaxAllowedCallbackHosts = 1000

// hostSet holds host patterns for lookups: the plain ones by host, the
// wildcards by the suffix after "*.". Matching a host costs a lookup per
// label of the host, whatever the number of patterns (§23): a plan of
// 2,000 callback URLs checked against every pattern took seconds.
type hostSet struct {
	exact map[string]bool
	wild  map[string]bool
}

func newHostSet(patterns []string) hostSet {
	h := hostSet{exact: make(map[string]bool, len(patterns)), wild: map[string]bool{}}
	for _, pat := range patterns {
		pat = strings.ToLower(pat)
		if suffix, wild := strings.CutPrefix(pat, "*."); wild {
			h.wild[suffix] = true
		} else {
			h.exact[pat] = true
		}
	}
	return h
}

// allows reports whether a host matches a pattern: "*.shop.example"
// matches one or more labels before shop.example (a.shop.example,
// a.b.shop.example) but not shop.example itself; a plain pattern matches
// exactly. Both are compared case-insensitively.
func (h hostSet) allows(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return false
	}
	if h.exact[host] {
		return true
	}
	// Every suffix that follows a dot with something before it.
	for i := 1; i < len(host); i++ {
		if host[i] == '.' && h.wild[host[i+1:]] {
			return true
		}
	}
	return false
}

// hostAllowed reports whether a host matches one of patterns (see
// hostSet.allows).
func hostAllowed(host string, patterns []string) bool {
	return newHostSet(patterns).allows(host)
}

// CheckPolicies checks one created or updated resource against the
// policies. It returns a problem per violated rule whose code is the
// policy's name and whose pointer is specPointer followed by the member path
// ("/changes/3/spec" → "/changes/3/spec/callback_urls/0"):
//
//   - require_https_callbacks, allowed_callback_hosts: at every offending
//     application callback URL (one URL may break both);
//   - min_password_length: at identity_settings /password_policy/min_length,
//     and at a database connection's /database/min_password_length, which
//     counts as 8 (the platform's default) when absent;
//   - forbid_social_connections: at /active of an active social connection;
//   - mfa_required: at identity_settings /mfa.
//
// spec is a canonical spec; a spec that cannot be decoded violates nothing.
func CheckPolicies(p Policies, kind Kind, spec json.RawMessage, specPointer string) []FieldError {
	return p.Checker()(kind, spec, specPointer)
}

// Checker returns CheckPolicies for p, its host patterns indexed once for
// every resource it checks.
func (p Policies) Checker() func(kind Kind, spec json.RawMessage, specPointer string) []FieldError {
	hosts := newHostSet(p.AllowedCallbackHosts)
	return func(kind Kind, spec json.RawMessage, specPointer string) []FieldError {
		return p.check(hosts, kind, spec, specPointer)
	}
}

func (p Policies) check(hosts hostSet, kind Kind, spec json.RawMessage, specPointer string) []FieldError {
	var out []FieldError
	violation := func(field string, code Code, detail string) {
		out = append(out, FieldError{Pointer: specPointer + field, Code: code, Detail: detail})
	}
	switch kind {
	case KindApplication:
		var s ApplicationSpec
		if json.Unmarshal(spec, &s) != nil {
			return nil
		}
		for i, cb := range s.CallbackURLs {
			field := fmt.Sprintf("/callback_urls/%d", i)
			u, err := url.Parse(cb)
			if p.RequireHTTPSCallbacks && (err != nil || u.Scheme != "https") {
				violation(field, PolicyRequireHTTPSCallbacks,
					"The environment requires https callback URLs, without the localhost exception.")
			}
			if len(p.AllowedCallbackHosts) > 0 && (err != nil || !hosts.allows(u.Hostname())) {
				violation(field, PolicyAllowedCallbackHosts,
					"The host of this callback URL is not one the environment allows.")
			}
		}
	case KindIdentitySettings:
		var s IdentitySettingsSpec
		if json.Unmarshal(spec, &s) != nil {
			return nil
		}
		if m := p.MinPasswordLength; m != nil && s.PasswordPolicy != nil && s.PasswordPolicy.MinLength != nil &&
			*s.PasswordPolicy.MinLength < *m {
			violation("/password_policy/min_length", PolicyMinPasswordLength,
				fmt.Sprintf("The environment requires passwords of at least %d characters.", *m))
		}
		if p.MFARequired && Deref(s.MFA) != "required" {
			violation("/mfa", PolicyMFARequired, `The environment requires mfa to be "required".`)
		}
	case KindConnection:
		var s ConnectionSpec
		if json.Unmarshal(spec, &s) != nil {
			return nil
		}
		if m := p.MinPasswordLength; m != nil && Deref(s.Type) == ConnectionDatabase && s.Database != nil {
			minLen := defaultMinPasswordLength
			if s.Database.MinPasswordLength != nil {
				minLen = *s.Database.MinPasswordLength
			}
			if minLen < *m {
				violation("/database/min_password_length", PolicyMinPasswordLength,
					fmt.Sprintf("The environment requires passwords of at least %d characters.", *m))
			}
		}
		if p.ForbidSocialConnections && Deref(s.Type) == ConnectionSocial && Deref(s.Active) {
			violation("/active", PolicyForbidSocialConnections,
				"The environment forbids active social connections.")
		}
	}
	return out
}
