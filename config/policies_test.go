package config

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodePolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		body         string
		want         Policies
		wantProblems []problem
	}{
		{"empty", `{}`, Policies{AllowedCallbackHosts: []string{}}, nil},
		{"all", `{"require_https_callbacks": true, "allowed_callback_hosts": ["*.Shop.Example", "localhost"],
			"min_password_length": 12, "forbid_social_connections": true, "mfa_required": true}`,
			Policies{RequireHTTPSCallbacks: true, AllowedCallbackHosts: []string{"*.shop.example", "localhost"},
				MinPasswordLength: new(12), ForbidSocialConnections: true, MFARequired: true}, nil},
		{"nulls are absent", `{"require_https_callbacks": null, "allowed_callback_hosts": null, "min_password_length": null}`,
			Policies{AllowedCallbackHosts: []string{}}, nil},
		{"min_password_length out of range", `{"min_password_length": 7}`,
			Policies{AllowedCallbackHosts: []string{}, MinPasswordLength: new(7)},
			[]problem{{"/min_password_length", "out_of_range"}}},
		{"min_password_length 129", `{"min_password_length": 129}`,
			Policies{AllowedCallbackHosts: []string{}, MinPasswordLength: new(129)},
			[]problem{{"/min_password_length", "out_of_range"}}},
		{"bad host patterns", `{"allowed_callback_hosts": ["ok.example", "*", "a.*.example", "-bad.example", "x.example:443", "https://x.example", "", "OK.example"]}`,
			Policies{AllowedCallbackHosts: []string{"ok.example", "*", "a.*.example", "-bad.example", "x.example:443", "https://x.example", "", "ok.example"}},
			[]problem{
				{"/allowed_callback_hosts/1", "invalid"}, {"/allowed_callback_hosts/2", "invalid"},
				{"/allowed_callback_hosts/3", "invalid"}, {"/allowed_callback_hosts/4", "invalid"},
				{"/allowed_callback_hosts/5", "invalid"}, {"/allowed_callback_hosts/6", "invalid"},
				{"/allowed_callback_hosts/7", "duplicate"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, problems, err := DecodePolicies([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodePolicies: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("policies (-want +got):\n%s", diff)
			}
			want := tt.wantProblems
			if want == nil {
				want = []problem{}
			}
			if diff := cmp.Diff(want, problemsOf(t, problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodePoliciesBadRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, wantCode string
		want                 []problem
	}{
		// The body as a whole is answered as a public body is: no pointer.
		{"not JSON", `{`, "malformed_request", []problem{}},
		{"not an object", `[]`, "malformed_request", []problem{}},
		{"data after the object", `{"mfa_required": true} {}`, "malformed_request", []problem{}},
		{"case variant", `{"MFA_Required": true}`, "unknown_field", []problem{{"/MFA_Required", "unknown_field"}}},
		{"unknown field", `{"mfa_required": true, "mfa": true}`, "unknown_field", []problem{{"/mfa", "unknown_field"}}},
		{"wrong types", `{"mfa_required": "yes", "min_password_length": 8.5, "allowed_callback_hosts": "a.example"}`, "malformed_request",
			[]problem{{"/mfa_required", "malformed_request"}, {"/min_password_length", "malformed_request"}, {"/allowed_callback_hosts", "malformed_request"}}},
		{"host pattern not a string", `{"allowed_callback_hosts": ["a.example", 1]}`, "malformed_request",
			[]problem{{"/allowed_callback_hosts/1", "malformed_request"}}},
		{"duplicate key", `{"mfa_required": true, "mfa_required": false}`, "malformed_request",
			[]problem{{"/mfa_required", "malformed_request"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := DecodePolicies([]byte(tt.body))
			e := badRequestOf(t, err)
			if string(e.Code) != tt.wantCode {
				t.Errorf("code = %q, want %q", e.Code, tt.wantCode)
			}
			if diff := cmp.Diff(tt.want, problemsOf(t, e.Errors)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostAllowed(t *testing.T) {
	t.Parallel()
	patterns := []string{"*.shop.example", "portal.example", "LOCALHOST"}
	tests := map[string]bool{
		"a.shop.example":      true,
		"a.b.shop.example":    true,
		"A.Shop.Example":      true,
		"shop.example":        false,
		"xshop.example":       false,
		"a.shop.example.evil": false,
		"portal.example":      true,
		"Portal.Example.":     true,
		"www.portal.example":  false,
		"localhost":           true,
		"":                    false,
	}
	for host, want := range tests {
		if got := hostAllowed(host, patterns); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestCheckPolicies(t *testing.T) {
	t.Parallel()
	const ptr = "/changes/3/spec"
	app := func(callbacks string) string {
		return `{"api_grants":[],"callback_urls":` + callbacks + `,"connections":[],"display_name":"P","type":"spa"}`
	}
	identity := func(minLength, mfa string) string {
		return `{"allowed_identifiers":["email"],"mfa":"` + mfa + `","password_policy":{"min_length":` + minLength +
			`,"require_digits":false,"require_symbols":false}}`
	}
	database := func(db string) string {
		return `{"active":true,"database":` + db + `,"display_name":"D","type":"database"}`
	}
	social := func(active string) string {
		return `{"active":` + active + `,"display_name":"G","social":{"provider":"github","use_own_credentials":false},"type":"social"}`
	}
	strict := Policies{RequireHTTPSCallbacks: true, AllowedCallbackHosts: []string{"*.shop.example"},
		MinPasswordLength: new(12), ForbidSocialConnections: true, MFARequired: true}
	tests := []struct {
		name     string
		policies Policies
		kind     Kind
		spec     string
		want     []problem
	}{
		{"no policy", Policies{}, KindApplication, app(`["http://localhost/cb"]`), nil},
		{"https required", Policies{RequireHTTPSCallbacks: true}, KindApplication,
			app(`["https://a.example/cb", "http://localhost:3000/cb"]`),
			[]problem{{ptr + "/callback_urls/1", "require_https_callbacks"}}},
		{"allowed hosts", Policies{AllowedCallbackHosts: []string{"*.shop.example", "localhost"}}, KindApplication,
			app(`["https://portal.shop.example/cb", "https://shop.example/cb", "http://localhost/cb", "https://evil.example/cb"]`),
			[]problem{{ptr + "/callback_urls/1", "allowed_callback_hosts"}, {ptr + "/callback_urls/3", "allowed_callback_hosts"}}},
		{"one URL breaks two policies", strict, KindApplication, app(`["http://localhost/cb"]`),
			[]problem{{ptr + "/callback_urls/0", "require_https_callbacks"}, {ptr + "/callback_urls/0", "allowed_callback_hosts"}}},
		{"identity passes", strict, KindIdentitySettings, identity("12", "required"), nil},
		{"identity min length and mfa", strict, KindIdentitySettings, identity("11", "optional"),
			[]problem{{ptr + "/password_policy/min_length", "min_password_length"}, {ptr + "/mfa", "mfa_required"}}},
		{"database min length", strict, KindConnection, database(`{"min_password_length":10,"requires_username":false}`),
			[]problem{{ptr + "/database/min_password_length", "min_password_length"}}},
		{"database min length passes", strict, KindConnection, database(`{"min_password_length":12,"requires_username":false}`), nil},
		{"database default min length is 8", Policies{MinPasswordLength: new(9)}, KindConnection, database(`{"requires_username":false}`),
			[]problem{{ptr + "/database/min_password_length", "min_password_length"}}},
		{"database default min length meets 8", Policies{MinPasswordLength: new(8)}, KindConnection, database(`{"requires_username":false}`), nil},
		{"active social forbidden", strict, KindConnection, social("true"),
			[]problem{{ptr + "/active", "forbid_social_connections"}}},
		{"inactive social allowed", strict, KindConnection, social("false"), nil},
		{"other kinds are not concerned", strict, KindBranding, `{"primary_color":"#000000"}`, nil},
		{"undecodable spec", strict, KindApplication, `[]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := tt.want
			if want == nil {
				want = []problem{}
			}
			got := CheckPolicies(tt.policies, tt.kind, json.RawMessage(tt.spec), ptr)
			if diff := cmp.Diff(want, problemsOf(t, got)); diff != "" {
				t.Errorf("CheckPolicies (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodePoliciesRules(t *testing.T) {
	t.Parallel()
	_, problems, err := DecodePolicies([]byte(`{"rules": [{"name": "a", "when": "true", "enforcement": "approval", "approvals": 5, "message": "m"},
		{"name": "a", "when": "true", "enforcement": "warn", "approvals": 1, "message": "m"}, {}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Code{}
	for _, p := range problems {
		got[p.Pointer] = p.Code
	}
	want := map[string]Code{"/rules/1/name": CodeDuplicate, "/rules/1/approvals": CodeInvalid, "/rules/2/name": CodeRequired,
		"/rules/2/when": CodeRequired, "/rules/2/enforcement": CodeRequired, "/rules/2/message": CodeRequired}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if _, _, err := DecodePolicies([]byte(`{"rules": [{"name": "a", "extra": 1}]}`)); err == nil {
		t.Error("an unknown member of a rule was accepted")
	}
}
