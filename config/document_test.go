package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/keenauth/configplans/config/displayname"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exampleDocument is the document of SPEC §4.
const exampleDocument = `{
  "environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 72},
  "connections": {
    "legacy":   null,
    "acme-sso": {"type": "enterprise", "display_name": "ACME", "active": false,
                 "oidc": {"issuer": "https://idp.acme.example", "client_id": "abc", "scopes": ["openid", "email"]}},
    "github":   {"type": "social", "display_name": "GitHub", "active": true,
                 "social": {"provider": "github", "use_own_credentials": false}}
  },
  "apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
                      "scopes": [{"value": "read:orders", "description": "Read orders"}],
                      "token_lifetime_seconds": 3600}},
  "applications": {"portal": {"display_name": "Portal", "type": "regular_web",
                   "callback_urls": ["https://portal.shop.example/callback"],
                   "connections": ["acme-sso"], "api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}}
}`

// problem is a FieldError without its detail, which tests do not pin.
type problem struct{ Pointer, Code string }

func problemsOf(t *testing.T, errs []FieldError) []problem {
	t.Helper()
	out := []problem{}
	for _, e := range errs {
		if e.Detail == "" || !strings.HasSuffix(e.Detail, ".") || len(e.Detail) > 200 {
			t.Errorf("problem %s %s: detail %q is not one short sentence", e.Pointer, e.Code, e.Detail)
		}
		out = append(out, problem{e.Pointer, string(e.Code)})
	}
	return out
}

// badRequestOf returns the *Error of err, failing the test for another error.
func badRequestOf(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want an *Error", err)
	}
	return e
}

func TestDecodeDocumentExample(t *testing.T) {
	t.Parallel()
	doc, problems, err := DecodeDocument(json.RawMessage(exampleDocument), "/config")
	if err != nil || len(problems) != 0 {
		t.Fatalf("DecodeDocument: err %v, problems %v", err, problems)
	}
	wantTypes := []Kind{KindAPI, KindConnection, KindApplication, KindEnvironmentSettings}
	if diff := cmp.Diff(wantTypes, doc.Types); diff != "" {
		t.Errorf("Types (-want +got):\n%s", diff)
	}
	got := map[string]string{}
	for _, entries := range doc.Entries {
		for _, e := range entries {
			got[string(e.Kind)+"/"+e.Key] = string(e.Spec)
		}
	}
	want := map[string]string{
		"environment_settings/default": `{"default_locale":"en","display_name":"Shop","session_lifetime_hours":72}`,
		"connection/legacy":            ``,
		"connection/acme-sso":          `{"active":false,"display_name":"ACME","oidc":{"client_id":"abc","issuer":"https://idp.acme.example","scopes":["openid","email"]},"type":"enterprise"}`,
		"connection/github":            `{"active":true,"display_name":"GitHub","social":{"provider":"github","use_own_credentials":false},"type":"social"}`,
		"api/orders":                   `{"display_name":"Orders","identifier":"https://api.shop.example/orders","scopes":[{"description":"Read orders","value":"read:orders"}],"token_lifetime_seconds":3600}`,
		"application/portal":           `{"api_grants":[{"api":"orders","scopes":["read:orders"]}],"callback_urls":["https://portal.shop.example/callback"],"connections":["acme-sso"],"display_name":"Portal","type":"regular_web"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	var keys []string
	for _, e := range doc.Entries[KindConnection] {
		keys = append(keys, e.Key)
	}
	if diff := cmp.Diff([]string{"acme-sso", "github", "legacy"}, keys); diff != "" {
		t.Errorf("connection entries not sorted by key (-want +got):\n%s", diff)
	}
	if doc.Entries[KindConnection][2].Spec != nil {
		t.Errorf("a deletion must have a nil Spec")
	}
}

func TestDecodeDocumentShapes(t *testing.T) {
	t.Parallel()
	const role = `{"display_name": "R"}`
	tests := []struct {
		name     string
		doc      string
		wantCode string // of the *Error; "" when the document decodes
		want     []problem
	}{
		{"not JSON", `{"roles": `, "malformed_request", []problem{{"/config", "malformed_request"}}},
		{"trailing data", `{} {}`, "malformed_request", []problem{{"/config", "malformed_request"}}},
		{"array", `[]`, "malformed_request", []problem{{"/config", "malformed_request"}}},
		{"null", `null`, "malformed_request", []problem{{"/config", "malformed_request"}}},
		{"empty input", ``, "malformed_request", []problem{{"/config", "malformed_request"}}},
		{"unknown document key", `{"roles": {}, "rolez": {}}`, "unknown_field",
			[]problem{{"/config/rolez", "unknown_field"}}},
		{"unknown document key with escaping", `{"a/b~c": 1}`, "unknown_field",
			[]problem{{"/config/a~1b~0c", "unknown_field"}}},
		{"unknown and malformed together", `{"nope": 1, "roles": []}`, "malformed_request",
			[]problem{{"/config/nope", "unknown_field"}, {"/config/roles", "malformed_request"}}},
		{"key map is null", `{"connections": null}`, "malformed_request",
			[]problem{{"/config/connections", "malformed_request"}}},
		{"spec is a string", `{"roles": {"a": "x"}}`, "malformed_request",
			[]problem{{"/config/roles/a", "malformed_request"}}},
		{"singleton is an array", `{"branding": []}`, "malformed_request",
			[]problem{{"/config/branding", "malformed_request"}}},
		{"singleton as a key map", `{"branding": {"default": {"primary_color": "#000000"}}}`, "unknown_field",
			[]problem{{"/config/branding/default", "unknown_field"}}},
		{"duplicate document key", `{"roles": {}, "roles": {}}`, "malformed_request",
			[]problem{{"/config/roles", "malformed_request"}}},
		{"duplicate resource key", `{"roles": {"a": ` + role + `, "a": ` + role + `}}`, "malformed_request",
			[]problem{{"/config/roles/a", "malformed_request"}}},
		{"duplicate member in a spec", `{"roles": {"a": {"display_name": "R", "display_name": "S"}}}`, "malformed_request",
			[]problem{{"/config/roles/a/display_name", "malformed_request"}}},
		{"duplicate member deep in a spec", `{"applications": {"p": {"display_name": "P", "type": "spa",
			"api_grants": [{"api": "o", "scopes": ["s"], "api": "o"}]}}}`, "malformed_request",
			[]problem{{"/config/applications/p/api_grants/0/api", "malformed_request"}}},
		{"unknown fields at every depth", `{"connections": {"a/b": {"type": "enterprise", "display_name": "A", "active": true,
			"x~y": 1, "oidc": {"issuer": "https://i.example", "client_id": "c", "scopes": ["openid"], "bogus": true}}},
			"applications": {"p": {"display_name": "P", "type": "spa", "api_grants": [{"api": "o", "scopes": ["s"], "extra": []}]}},
			"apis": {"o": {"identifier": "https://o.example", "display_name": "O", "token_lifetime_seconds": 60,
			"scopes": [{"value": "s", "label": "S"}]}},
			"attack_protection": {"bot_detection": "off", "breached_password_detection": {"enabled": true, "level": 2},
			"brute_force": {"enabled": true, "max_attempts": 3}}}`, "unknown_field",
			[]problem{
				{"/config/connections/a~1b/x~0y", "unknown_field"},
				{"/config/connections/a~1b/oidc/bogus", "unknown_field"},
				{"/config/applications/p/api_grants/0/extra", "unknown_field"},
				{"/config/apis/o/scopes/0/label", "unknown_field"},
				{"/config/attack_protection/breached_password_detection/level", "unknown_field"},
			}},
		{"wrong JSON types", `{"environment_settings": {"display_name": 1, "default_locale": "en",
			"session_lifetime_hours": "72", "idle_session_lifetime_hours": 1.5},
			"identity_settings": {"allowed_identifiers": "email", "mfa": null,
			"password_policy": {"min_length": 8, "require_digits": "false", "require_symbols": 0}},
			"applications": {"p": {"display_name": "P", "type": "spa", "callback_urls": [1, null],
			"connections": {}, "api_grants": ["orders"]}},
			"connections": {"d": {"type": "database", "display_name": "D", "active": true, "database": null}}}`,
			"malformed_request",
			[]problem{
				{"/config/environment_settings/display_name", "malformed_request"},
				{"/config/environment_settings/session_lifetime_hours", "malformed_request"},
				{"/config/environment_settings/idle_session_lifetime_hours", "malformed_request"},
				{"/config/identity_settings/allowed_identifiers", "malformed_request"},
				{"/config/identity_settings/mfa", "malformed_request"},
				{"/config/identity_settings/password_policy/require_digits", "malformed_request"},
				{"/config/identity_settings/password_policy/require_symbols", "malformed_request"},
				{"/config/applications/p/callback_urls/0", "malformed_request"},
				{"/config/applications/p/callback_urls/1", "malformed_request"},
				{"/config/applications/p/connections", "malformed_request"},
				{"/config/applications/p/api_grants/0", "malformed_request"},
				{"/config/connections/d/database", "malformed_request"},
			}},
		{"integer out of int64", `{"apis": {"o": {"identifier": "https://o.example", "display_name": "O",
			"token_lifetime_seconds": 99999999999999999999}}}`, "malformed_request",
			[]problem{{"/config/apis/o/token_lifetime_seconds", "malformed_request"}}},
		{"nested too deeply", `{"roles": {"a": {"display_name": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}}`,
			"malformed_request", []problem{{"/config", "malformed_request"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, problems, err := DecodeDocument(json.RawMessage(tt.doc), "/config")
			if err == nil {
				t.Fatalf("DecodeDocument: no error; problems %v", problems)
			}
			if doc != nil || problems != nil {
				t.Errorf("with an error, doc and problems must be nil")
			}
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

func TestDecodeDocumentProblems(t *testing.T) {
	t.Parallel()
	role := func(name string) string { return `{"display_name": "` + name + `"}` }
	conn := func(name string) string {
		return `{"type": "database", "display_name": "` + name + `", "active": true, "database": {"requires_username": false}}`
	}
	api := func(id string) string {
		return `{"identifier": "` + id + `", "display_name": "A", "token_lifetime_seconds": 60}`
	}
	tests := []struct {
		name string
		doc  string
		want []problem
	}{
		{"empty document", `{}`, []problem{{"/config", "empty"}}},
		{"singleton mapped to null", `{"branding": null, "identity_settings": null}`, []problem{
			{"/config/branding", "not_deletable"}, {"/config/identity_settings", "not_deletable"}}},
		{"invalid keys", `{"roles": {"Bad_Key": ` + role("A") + `, "a/b": null, "-a": null, "` + strings.Repeat("k", 64) + `": null, "` +
			strings.Repeat("k", 63) + `": null, "": null}}`, []problem{
			{"/config/roles/Bad_Key", "invalid"}, {"/config/roles/a~1b", "invalid"}, {"/config/roles/-a", "invalid"},
			{"/config/roles/" + strings.Repeat("k", 64), "invalid"}, {"/config/roles/", "invalid"}}},
		{"duplicate role names", `{"roles": {"c": ` + role("Admin") + `, "a": ` + role("Admin") + `, "b": ` + role("Admin") +
			`, "d": ` + role("Other") + `}}`, []problem{
			{"/config/roles/b/display_name", "duplicate"}, {"/config/roles/c/display_name", "duplicate"}}},
		{"duplicate connection names and api identifiers", `{"connections": {"x": ` + conn("Main") + `, "y": ` + conn("Main") + `},
			"apis": {"p": ` + api("https://a.example") + `, "q": ` + api("https://a.example") + `, "r": ` + api("https://b.example") + `}}`,
			[]problem{{"/config/apis/q/identifier", "duplicate"}, {"/config/connections/y/display_name", "duplicate"}}},
		{"same name across kinds is fine", `{"roles": {"a": ` + role("Main") + `},
			"connections": {"a": ` + conn("Main") + `}}`, nil},
		{"display names compared folded", `{"roles": {"a": ` + role("Main") + `, "b": ` + role("MAIN") + `, "c": ` + role("main") + `},
			"connections": {"x": ` + conn("Caf\u00e9") + `, "y": ` + conn("CAFE\u0301") + `, "z": ` + conn("Stra\u00dfe") + `,
			"zz": ` + conn("STRASSE") + `}}`, []problem{
			{"/config/connections/y/display_name", "duplicate"}, {"/config/connections/zz/display_name", "duplicate"},
			{"/config/roles/b/display_name", "duplicate"}, {"/config/roles/c/display_name", "duplicate"}}},
		{"api identifiers compared byte for byte", `{"apis": {"p": ` + api("https://a.example/Orders") + `, "q": ` + api("https://a.example/orders") + `}}`, nil},
		{"every problem of every resource", `{
			"roles": {"a": {"display_name": "", "permissions": [{"api": "Orders", "scope": "s"}]}},
			"connections": {"c": {"type": "enterprise", "display_name": "C", "active": true,
				"oidc": {"issuer": "http://idp.example", "client_id": "x", "scopes": ["email"]}}},
			"environment_settings": {"display_name": "E", "default_locale": "en", "session_lifetime_hours": 0}}`,
			[]problem{
				{"/config/roles/a/display_name", "too_short"},
				{"/config/roles/a/permissions/0/api", "invalid"},
				{"/config/connections/c/oidc/issuer", "invalid"},
				{"/config/connections/c/oidc/scopes", "must_include_openid"},
				{"/config/environment_settings/session_lifetime_hours", "out_of_range"},
			}},
		{"dangling references are not checked here", `{"applications": {"p": {"display_name": "P", "type": "spa",
			"connections": ["nowhere"], "api_grants": [{"api": "none", "scopes": ["x"]}]}},
			"roles": {"r": {"display_name": "R", "permissions": [{"api": "none", "scope": "y"}]}},
			"application_branding": {"ghost": {"primary_color": "#000000"}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, problems, err := DecodeDocument(json.RawMessage(tt.doc), "/config")
			if err != nil {
				t.Fatalf("DecodeDocument: %v", err)
			}
			if doc == nil {
				t.Fatal("doc is nil")
			}
			want := tt.want
			if want == nil {
				want = []problem{}
			}
			if diff := cmp.Diff(want, problemsOf(t, problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeDocumentDuplicateDetailNamesTheOther(t *testing.T) {
	t.Parallel()
	_, problems, err := DecodeDocument(json.RawMessage(`{"roles": {"a": {"display_name": "X"}, "b": {"display_name": "X"}}}`), "/config")
	if err != nil || len(problems) != 1 {
		t.Fatalf("err %v, problems %v", err, problems)
	}
	if !strings.Contains(problems[0].Detail, `"a"`) {
		t.Errorf("detail %q does not name the role a", problems[0].Detail)
	}
}

func TestDecodeDocumentTypesAndEntries(t *testing.T) {
	t.Parallel()
	doc, problems, err := DecodeDocument(json.RawMessage(`{"branding": {"primary_color": "#ABCDEF"},
		"application_branding": {"portal": {"primary_color": "#000000", "logo_url": "https://cdn.example/l.png?a=1&b=2"}},
		"roles": {}, "apis": {"z": null, "a": null}}`), "/base")
	if err != nil || len(problems) != 0 {
		t.Fatalf("err %v, problems %v", err, problems)
	}
	if diff := cmp.Diff([]Kind{KindAPI, KindRole, KindApplicationBranding, KindBranding}, doc.Types); diff != "" {
		t.Errorf("Types (-want +got):\n%s", diff)
	}
	want := map[Kind][]Entry{
		KindAPI:                 {{Kind: KindAPI, Key: "a"}, {Kind: KindAPI, Key: "z"}},
		KindRole:                {},
		KindApplicationBranding: {{Kind: KindApplicationBranding, Key: "portal", Spec: json.RawMessage(`{"logo_url":"https://cdn.example/l.png?a=1&b=2","primary_color":"#000000"}`)}},
		KindBranding:            {{Kind: KindBranding, Key: SingletonKey, Spec: json.RawMessage(`{"primary_color":"#abcdef"}`)}},
	}
	if diff := cmp.Diff(want, doc.Entries); diff != "" {
		t.Errorf("Entries (-want +got):\n%s", diff)
	}
}

func TestDecodeDocumentInvalidSpecStillHasEntry(t *testing.T) {
	t.Parallel()
	doc, problems, err := DecodeDocument(json.RawMessage(`{"connections": {"c": {"type": "database", "display_name": "C", "active": true}}}`), "/config")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]problem{{"/config/connections/c/database", "required"}}, problemsOf(t, problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if len(doc.Entries[KindConnection]) != 1 || doc.Entries[KindConnection][0].Spec == nil {
		t.Errorf("an invalid spec keeps an entry with a best-effort spec: %+v", doc.Entries)
	}
}

func TestNormalizeSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind     Kind
		in, want string
	}{
		{KindEnvironmentSettings, `{"session_lifetime_hours": 24, "display_name": "Shop", "default_locale": "pt-BR", "idle_session_lifetime_hours": 2}`,
			`{"default_locale":"pt-BR","display_name":"Shop","idle_session_lifetime_hours":2,"session_lifetime_hours":24}`},
		{KindIdentitySettings, `{"mfa": "off", "allowed_identifiers": ["username", "email"], "password_policy": {"require_symbols": true, "min_length": 12, "require_digits": false}}`,
			`{"allowed_identifiers":["username","email"],"mfa":"off","password_policy":{"min_length":12,"require_digits":false,"require_symbols":true}}`},
		{KindAttackProtection, `{"bot_detection": "high", "brute_force": {"max_attempts": 5, "enabled": false}, "breached_password_detection": {"enabled": true}}`,
			`{"bot_detection":"high","breached_password_detection":{"enabled":true},"brute_force":{"enabled":false,"max_attempts":5}}`},
		{KindBranding, `{"primary_color": "#ABCDEF", "page_background_color": "#FfFfFf", "logo_url": "https://cdn.example/logo.svg"}`,
			`{"logo_url":"https://cdn.example/logo.svg","page_background_color":"#ffffff","primary_color":"#abcdef"}`},
		{KindConnection, `{"type": "database", "display_name": "Users", "active": true, "database": {"requires_username": true}}`,
			`{"active":true,"database":{"requires_username":true},"display_name":"Users","type":"database"}`},
		{KindConnection, `{"type": "database", "display_name": "Users", "active": true, "database": {"requires_username": true, "min_password_length": 10}}`,
			`{"active":true,"database":{"min_password_length":10,"requires_username":true},"display_name":"Users","type":"database"}`},
		{KindConnection, `{"type": "social", "display_name": "G", "active": false, "social": {"provider": "google", "use_own_credentials": true, "client_id": "cid"}}`,
			`{"active":false,"display_name":"G","social":{"client_id":"cid","provider":"google","use_own_credentials":true},"type":"social"}`},
		{KindConnection, `{"type": "enterprise", "display_name": "E", "active": false, "oidc": null}`,
			`{"active":false,"display_name":"E","oidc":null,"type":"enterprise"}`},
		{KindAPI, `{"identifier": "urn:shop:orders", "display_name": "Orders", "token_lifetime_seconds": 86400}`,
			`{"display_name":"Orders","identifier":"urn:shop:orders","scopes":[],"token_lifetime_seconds":86400}`},
		{KindRole, `{"display_name": "Admin"}`, `{"display_name":"Admin","permissions":[]}`},
		{KindRole, `{"display_name": "Admin", "description": "", "permissions": [{"scope": "read:orders", "api": "orders"}]}`,
			`{"description":"","display_name":"Admin","permissions":[{"api":"orders","scope":"read:orders"}]}`},
		{KindApplication, `{"display_name": "M2M", "type": "machine_to_machine"}`,
			`{"api_grants":[],"callback_urls":[],"connections":[],"display_name":"M2M","type":"machine_to_machine"}`},
		{KindApplication, `{"display_name": "<Café & Co>", "type": "native", "callback_urls": ["http://localhost:8080/cb?x=1&y=2", "https://app.example/cb"]}`,
			`{"api_grants":[],"callback_urls":["http://localhost:8080/cb?x=1&y=2","https://app.example/cb"],"connections":[],"display_name":"<Café & Co>","type":"native"}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			t.Parallel()
			got, err := NormalizeSpec(tt.kind, json.RawMessage(tt.in))
			if err != nil {
				t.Fatalf("NormalizeSpec: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("NormalizeSpec =\n%s\nwant\n%s", got, tt.want)
			}
			again, err := NormalizeSpec(tt.kind, got)
			if err != nil || string(again) != string(got) {
				t.Errorf("NormalizeSpec is not idempotent: %s, %v", again, err)
			}
		})
	}
}

func TestNormalizeSpecErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		kind     Kind
		in       string
		wantCode string
		want     []problem
	}{
		{"not an object", KindRole, `[]`, "malformed_request", []problem{{"", "malformed_request"}}},
		{"null", KindRole, `null`, "malformed_request", []problem{{"", "malformed_request"}}},
		{"unknown field", KindRole, `{"display_name": "R", "colour": "red"}`, "unknown_field", []problem{{"/colour", "unknown_field"}}},
		{"invalid", KindRole, `{"display_name": ""}`, "validation_failed", []problem{{"/display_name", "too_short"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NormalizeSpec(tt.kind, json.RawMessage(tt.in))
			e := badRequestOf(t, err)
			if string(e.Code) != tt.wantCode {
				t.Errorf("code = %q, want %q", e.Code, tt.wantCode)
			}
			if diff := cmp.Diff(tt.want, problemsOf(t, e.Errors)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := NormalizeSpec("widget", json.RawMessage(`{}`)); err == nil {
		t.Error("an unknown kind must be refused")
	}
}

func TestDefaultSingletons(t *testing.T) {
	t.Parallel()
	got := DefaultSingletons("Shop")
	want := map[Kind]string{
		KindEnvironmentSettings: `{"default_locale":"en","display_name":"Shop","session_lifetime_hours":168}`,
		KindIdentitySettings:    `{"allowed_identifiers":["email"],"mfa":"optional","password_policy":{"min_length":8,"require_digits":false,"require_symbols":false}}`,
		KindAttackProtection:    `{"bot_detection":"off","breached_password_detection":{"enabled":false},"brute_force":{"enabled":true,"max_attempts":10}}`,
		KindBranding:            `{"primary_color":"#635bff"}`,
	}
	gotStrings := map[Kind]string{}
	for k, v := range got {
		gotStrings[k] = string(v)
		again, err := NormalizeSpec(k, v)
		if err != nil || string(again) != string(v) {
			t.Errorf("%s default is not canonical: %s, %v", k, again, err)
		}
	}
	if diff := cmp.Diff(want, gotStrings); diff != "" {
		t.Errorf("DefaultSingletons (-want +got):\n%s", diff)
	}
	for _, name := range []string{"", "  ", strings.Repeat("é", 200)} {
		spec := DefaultSingletons(name)[KindEnvironmentSettings]
		if _, err := NormalizeSpec(KindEnvironmentSettings, spec); err != nil {
			t.Errorf("default environment_settings for name %q is invalid: %v", name, err)
		}
	}
}

func TestReferences(t *testing.T) {
	t.Parallel()
	app := json.RawMessage(`{"api_grants":[{"api":"orders","scopes":["read","write"]},{"api":"users","scopes":["read"]}],
		"callback_urls":[],"connections":["db","sso"],"display_name":"P","type":"spa"}`)
	role := json.RawMessage(`{"display_name":"R","permissions":[{"api":"orders","scope":"read"}]}`)
	tests := []struct {
		kind Kind
		key  string
		spec json.RawMessage
		want []Reference
	}{
		{KindApplication, "portal", app, []Reference{
			{Kind: KindConnection, Key: "db", Pointer: "/connections/0"},
			{Kind: KindConnection, Key: "sso", Pointer: "/connections/1"},
			{Kind: KindAPI, Key: "orders", Scope: "read", Pointer: "/api_grants/0/scopes/0"},
			{Kind: KindAPI, Key: "orders", Scope: "write", Pointer: "/api_grants/0/scopes/1"},
			{Kind: KindAPI, Key: "users", Scope: "read", Pointer: "/api_grants/1/scopes/0"},
		}},
		{KindRole, "admin", role, []Reference{{Kind: KindAPI, Key: "orders", Scope: "read", Pointer: "/permissions/0"}}},
		{KindApplicationBranding, "portal", json.RawMessage(`{"primary_color":"#000000"}`),
			[]Reference{{Kind: KindApplication, Key: "portal"}}},
		{KindAPI, "orders", json.RawMessage(`{"identifier":"urn:x","display_name":"O","scopes":[],"token_lifetime_seconds":60}`), nil},
		{KindApplication, "broken", json.RawMessage(`not json`), nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, References(tt.kind, tt.key, tt.spec)); diff != "" {
			t.Errorf("References(%s/%s) (-want +got):\n%s", tt.kind, tt.key, diff)
		}
	}
}

func TestAPIScopesAndUniqueValues(t *testing.T) {
	t.Parallel()
	api := json.RawMessage(`{"display_name":"O","identifier":"https://o.example","scopes":[{"value":"a"},{"value":"b","description":"B"}],"token_lifetime_seconds":60}`)
	if diff := cmp.Diff([]string{"a", "b"}, APIScopes(api)); diff != "" {
		t.Errorf("APIScopes (-want +got):\n%s", diff)
	}
	if got := APIScopes(json.RawMessage(`{"scopes":[]}`)); got == nil || len(got) != 0 {
		t.Errorf("APIScopes of no scopes = %#v, want an empty slice", got)
	}
	tests := []struct {
		kind Kind
		spec string
		want []UniqueValue
	}{
		{KindAPI, string(api), []UniqueValue{{"identifier", "https://o.example", "https://o.example"}}},
		// An identifier is compared byte for byte, a display name folded.
		{KindAPI, `{"identifier":"https://O.example/Orders"}`, []UniqueValue{{"identifier", "https://O.example/Orders", "https://O.example/Orders"}}},
		{KindConnection, `{"display_name":"Main","type":"social"}`, []UniqueValue{{"display_name", "Main", "main"}}},
		{KindConnection, `{"display_name":"CAFE\u0301"}`, []UniqueValue{{"display_name", "CAFE\u0301", "caf\u00e9"}}},
		{KindRole, `{"display_name":"Admin"}`, []UniqueValue{{"display_name", "Admin", "admin"}}},
		{KindApplication, `{"display_name":"P"}`, nil},
		{KindRole, `{"description":"no name"}`, nil},
		{KindRole, `null`, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, UniqueValues(tt.kind, json.RawMessage(tt.spec))); diff != "" {
			t.Errorf("UniqueValues(%s, %s) (-want +got):\n%s", tt.kind, tt.spec, diff)
		}
	}
}

func FuzzDecodeDocument(f *testing.F) {
	for _, seed := range []string{
		exampleDocument, `{}`, `[]`, `null`, `{"roles": {"a": null}}`, `{"branding": null}`,
		`{"connections": {"e": {"type": "enterprise", "display_name": "E", "active": false, "oidc": null}}}`,
		`{"roles": {"a": {"display_name": "x", "display_name": "y"}}}`,
		`{"apis": {"o": {"identifier": "urn:a", "display_name": "O", "token_lifetime_seconds": 1e3}}}`,
		`{"applications": {"p": {"display_name": "P", "type": "spa", "callback_urls": ["http://localhost/cb"]}}}`,
		`{"identity_settings": {"allowed_identifiers": ["email", "email"], "mfa": "x", "password_policy": {}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, problems, err := DecodeDocument(data, "/config")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || len(e.Errors) == 0 || doc != nil {
				t.Fatalf("bad error %#v (doc %v)", err, doc)
			}
			return
		}
		if doc == nil {
			t.Fatal("no error and no document")
		}
		if len(problems) > 0 {
			return
		}
		for kind, entries := range doc.Entries {
			for _, e := range entries {
				if e.Spec == nil {
					continue
				}
				again, err := NormalizeSpec(kind, e.Spec)
				if err != nil || string(again) != string(e.Spec) {
					t.Fatalf("%s/%s: canonical spec %s normalises to %s, %v", kind, e.Key, e.Spec, again, err)
				}
				if d := Diff(e.Spec, e.Spec); len(d) != 0 {
					t.Fatalf("Diff of a spec with itself: %v", d)
				}
			}
		}
	})
}

// uniqueValuesByDecoder is UniqueValues as the decoder reads it: what the
// scan of topLevelMember must agree with on every valid JSON text.
func uniqueValuesByDecoder(kind Kind, raw json.RawMessage) []UniqueValue {
	var members struct {
		DisplayName json.RawMessage `json:"display_name"`
		Identifier  json.RawMessage `json:"identifier"`
	}
	if json.Unmarshal(raw, &members) != nil {
		return nil
	}
	field, value := "display_name", members.DisplayName
	if kind == KindAPI {
		field, value = "identifier", members.Identifier
	}
	var v string
	if json.Unmarshal(value, &v) != nil || v == "" {
		return nil
	}
	key := v
	if field == "display_name" {
		key = displayname.Key(v)
	}
	return []UniqueValue{{Field: field, Value: v, Key: key}}
}

func FuzzUniqueValuesAgreeWithTheDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"display_name":"O","identifier":"https://o.example","scopes":[{"value":"a"},{"value":"b","description":"B"}]}`,
		`{"identifier":"a","identifier":"b"}`, `{"Identifier":"x"}`, `{"identifier":"a\"b\\"}`, `{ "identifier" : "x" , "n": [1, {"identifier": "y"}] }`,
		`{"display_name":"CAFE\u0301"}`, `{"ident\u0069fier":"x"}`, `{}`, `[]`, `null`, `{"identifier":1e3}`, `{"identifier":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		for _, k := range []Kind{KindAPI, KindRole} {
			if diff := cmp.Diff(uniqueValuesByDecoder(k, data), UniqueValues(k, data)); diff != "" {
				t.Fatalf("UniqueValues(%s, %s) (-decoder +scan):\n%s", k, data, diff)
			}
		}
	})
}

// A spec is decoded from its text in the document: the same typed spec as
// from its parsed members encoded again, whatever the spacing, escapes and
// number forms of the text.
func TestSpecDecodedFromItsTextAsFromItsMembers(t *testing.T) {
	cases := []struct {
		kind Kind
		text string
	}{
		{KindAPI, ` { "identifier" : "https://api.example/o\u0072ders" ,"display_name":"Orders \"v2\" <b>&amp;</b>",
			"scopes":[ {"value":"read:orders","description":"R\u00e9ad\n\ttab"} ], "token_lifetime_seconds" : 3600 } `},
		{KindRole, "{\"display_name\":\"\u00c9quipe \u2028 line\",\"permissions\":[{\"api\":\"orders\",\"scope\":\"read:orders\"}]}"},
		{KindConnection, `{"type":"enterprise","display_name":"ACME","active":false,"oidc":{"issuer":"https://idp.example","client_id":"a\/b","scopes":["openid"]}}`},
		{KindEnvironmentSettings, `{"display_name":"Shop","default_locale":"en","session_lifetime_hours":72}`},
		{KindApplication, `{"display_name":"Portal","type":"regular_web","callback_urls":["https://p.example/cb"],"connections":[],"api_grants":[]}`},
	}
	for _, c := range cases {
		tree, bad, ok := parseStrict([]byte(c.text), "")
		if !ok || len(bad) > 0 {
			t.Fatalf("%s: parse: %v", c.text, bad)
		}
		obj := tree.(*jsonObject)
		if strings.TrimSpace(c.text) != string(obj.raw) {
			t.Errorf("raw = %s, want the object's text", obj.raw)
		}
		fromText, _ := newSpec(c.kind)
		if err := unmarshalTree(obj, fromText); err != nil {
			t.Fatal(err)
		}
		fromMembers, _ := newSpec(c.kind)
		obj.raw = nil
		if err := unmarshalTree(obj, fromMembers); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromText, fromMembers) {
			t.Errorf("%s: from the text %+v, from the members %+v", c.kind, fromText, fromMembers)
		}
	}
}

// TestDecodeDocumentOfManySpecsAsOneByOne: a document of enough specs to be
// decoded by several goroutines (decodeSpecs) gives each entry the spec
// that a document of that resource alone gives, and its 422-class problems
// in the document's order (keys out of order, invalid specs among them,
// roles before apis and apis again after them), as one by one.
func TestDecodeDocumentOfManySpecsAsOneByOne(t *testing.T) {
	t.Parallel()
	n := 8 * specsPerWorker
	spec := func(kind string, i int) string {
		if kind == "roles" {
			return fmt.Sprintf(`{"display_name": "Role %d", "permissions": []}`, i)
		}
		lifetime := 3600
		if i%7 == 3 {
			lifetime = -i // invalid: a problem of its own
		}
		return fmt.Sprintf(`{"identifier": "https://api.example/%d", "display_name": "API %d", "token_lifetime_seconds": %d,
			"scopes": [{"value": "read:%d", "description": "Scope \"%d\" ✓"}]}`, i, i, lifetime, i, i)
	}
	key := func(i int) string { return fmt.Sprintf("k%04d", (i*37)%n) } // keys out of their order
	var b strings.Builder
	b.WriteString(`{"apis": {`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %s", key(i), spec("apis", i))
	}
	b.WriteString(`}, "roles": {`)
	for i := range specsPerWorker {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %s", key(i), spec("roles", i))
	}
	b.WriteString(`}}`)
	doc, problems, err := DecodeDocument(json.RawMessage(b.String()), "/config")
	if err != nil {
		t.Fatal(err)
	}
	var want []FieldError
	wantSpecs := map[Kind]map[string]json.RawMessage{KindAPI: {}, KindRole: {}}
	for _, c := range []struct {
		kind  string
		count int
	}{{"apis", n}, {"roles", specsPerWorker}} {
		for i := range c.count {
			one, p, err := DecodeDocument(json.RawMessage(fmt.Sprintf(`{%q: {%q: %s}}`, c.kind, key(i), spec(c.kind, i))), "/config")
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, p...)
			for k, es := range one.Entries {
				wantSpecs[k][es[0].Key] = es[0].Spec
			}
		}
	}
	if len(want) < n/7 {
		t.Fatalf("only %d problems: the invalid specs are not invalid", len(want))
	}
	if diff := cmp.Diff(want, problems); diff != "" {
		t.Errorf("problems (-one by one +together):\n%s", diff)
	}
	for kind, specs := range wantSpecs {
		if len(doc.Entries[kind]) != len(specs) {
			t.Errorf("%s: %d entries, want %d", kind, len(doc.Entries[kind]), len(specs))
		}
		for _, e := range doc.Entries[kind] {
			if string(e.Spec) != string(specs[e.Key]) {
				t.Errorf("%s %s: spec %s, alone %s", kind, e.Key, e.Spec, specs[e.Key])
			}
		}
	}
}
