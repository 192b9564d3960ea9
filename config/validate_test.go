package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// validSpecs holds one valid spec per kind, which the rule cases edit.
var validSpecs = map[Kind]string{
	KindEnvironmentSettings: `{"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 72}`,
	KindIdentitySettings: `{"allowed_identifiers": ["email"], "mfa": "optional",
		"password_policy": {"min_length": 8, "require_digits": false, "require_symbols": false}}`,
	KindAttackProtection: `{"bot_detection": "off", "breached_password_detection": {"enabled": false},
		"brute_force": {"enabled": true, "max_attempts": 10}}`,
	KindBranding:            `{"primary_color": "#635bff"}`,
	KindApplicationBranding: `{"primary_color": "#635bff"}`,
	KindConnection: `{"type": "enterprise", "display_name": "ACME", "active": false,
		"oidc": {"issuer": "https://idp.acme.example", "client_id": "abc", "scopes": ["openid", "email"]}}`,
	KindAPI: `{"identifier": "https://api.shop.example/orders", "display_name": "Orders",
		"scopes": [{"value": "read:orders", "description": "Read orders"}], "token_lifetime_seconds": 3600}`,
	KindRole: `{"display_name": "Admin", "permissions": [{"api": "orders", "scope": "read:orders"}]}`,
	KindApplication: `{"display_name": "Portal", "type": "regular_web", "callback_urls": ["https://portal.shop.example/callback"],
		"connections": ["acme-sso"], "api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}`,
}

// absent, as an edit value, removes the member.
const absent = "<absent>"

// edit returns the valid spec of kind with members replaced: each pair is a
// pointer (without escaping) and the JSON text of its new value, or absent.
func edit(t *testing.T, kind Kind, pairs ...string) json.RawMessage {
	t.Helper()
	var root any
	if err := json.Unmarshal([]byte(validSpecs[kind]), &root); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(pairs); i += 2 {
		tokens := strings.Split(strings.TrimPrefix(pairs[i], "/"), "/")
		var value any
		if pairs[i+1] != absent {
			if err := json.Unmarshal([]byte(pairs[i+1]), &value); err != nil {
				t.Fatalf("value %s: %v", pairs[i+1], err)
			}
		}
		parent := root
		for _, tok := range tokens[:len(tokens)-1] {
			switch p := parent.(type) {
			case map[string]any:
				parent = p[tok]
			case []any:
				var n int
				fmt.Sscan(tok, &n)
				parent = p[n]
			}
		}
		last := tokens[len(tokens)-1]
		switch p := parent.(type) {
		case map[string]any:
			if pairs[i+1] == absent {
				delete(p, last)
			} else {
				p[last] = value
			}
		case []any:
			var n int
			fmt.Sscan(last, &n)
			p[n] = value
		default:
			t.Fatalf("edit %s: no parent", pairs[i])
		}
	}
	b, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestValidSpecs(t *testing.T) {
	t.Parallel()
	for kind, spec := range validSpecs {
		if _, err := NormalizeSpec(kind, json.RawMessage(spec)); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
}

// specRuleCase is an edit of a valid spec and the problems it makes.
type specRuleCase struct {
	name  string
	kind  Kind
	edits []string
	want  []problem // nil: the spec is valid
}

// specRuleCases are the rules of every spec, one case each (the schema's
// test reads them too).
func specRuleCases() []specRuleCase {
	long := func(n int) string { return `"` + strings.Repeat("x", n) + `"` }
	many := func(n int, f func(i int) string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = f(i)
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	return []specRuleCase{
		// environment_settings
		{"display_name absent", KindEnvironmentSettings, []string{"/display_name", absent}, []problem{{"/display_name", "required"}}},
		{"display_name empty", KindEnvironmentSettings, []string{"/display_name", `""`}, []problem{{"/display_name", "too_short"}}},
		{"display_name 128", KindEnvironmentSettings, []string{"/display_name", `"` + strings.Repeat("é", 128) + `"`}, nil},
		{"display_name 129", KindEnvironmentSettings, []string{"/display_name", long(129)}, []problem{{"/display_name", "too_long"}}},
		{"locale region", KindEnvironmentSettings, []string{"/default_locale", `"pt-BR"`}, nil},
		{"locale invalid", KindEnvironmentSettings, []string{"/default_locale", `"english"`}, []problem{{"/default_locale", "invalid"}}},
		{"locale absent", KindEnvironmentSettings, []string{"/default_locale", absent}, []problem{{"/default_locale", "required"}}},
		{"session 0", KindEnvironmentSettings, []string{"/session_lifetime_hours", `0`}, []problem{{"/session_lifetime_hours", "out_of_range"}}},
		{"session 8760", KindEnvironmentSettings, []string{"/session_lifetime_hours", `8760`}, nil},
		{"session 8761", KindEnvironmentSettings, []string{"/session_lifetime_hours", `8761`}, []problem{{"/session_lifetime_hours", "out_of_range"}}},
		{"session absent", KindEnvironmentSettings, []string{"/session_lifetime_hours", absent}, []problem{{"/session_lifetime_hours", "required"}}},
		{"idle 0", KindEnvironmentSettings, []string{"/idle_session_lifetime_hours", `0`}, []problem{{"/idle_session_lifetime_hours", "out_of_range"}}},
		{"idle equal", KindEnvironmentSettings, []string{"/idle_session_lifetime_hours", `72`}, nil},
		{"idle above session", KindEnvironmentSettings, []string{"/idle_session_lifetime_hours", `73`}, []problem{{"/idle_session_lifetime_hours", "out_of_range"}}},

		// identity_settings
		{"identifiers absent", KindIdentitySettings, []string{"/allowed_identifiers", absent}, []problem{{"/allowed_identifiers", "required"}}},
		{"identifiers empty", KindIdentitySettings, []string{"/allowed_identifiers", `[]`}, []problem{{"/allowed_identifiers", "too_short"}}},
		{"identifiers all", KindIdentitySettings, []string{"/allowed_identifiers", `["phone", "username", "email"]`}, nil},
		{"identifier unknown", KindIdentitySettings, []string{"/allowed_identifiers", `["email", "fax"]`}, []problem{{"/allowed_identifiers/1", "not_allowed"}}},
		{"identifier repeated", KindIdentitySettings, []string{"/allowed_identifiers", `["email", "phone", "email"]`}, []problem{{"/allowed_identifiers/2", "duplicate"}}},
		{"password policy absent", KindIdentitySettings, []string{"/password_policy", absent}, []problem{{"/password_policy", "required"}}},
		{"min_length 7", KindIdentitySettings, []string{"/password_policy/min_length", `7`}, []problem{{"/password_policy/min_length", "out_of_range"}}},
		{"min_length 129", KindIdentitySettings, []string{"/password_policy/min_length", `129`}, []problem{{"/password_policy/min_length", "out_of_range"}}},
		{"password policy members absent", KindIdentitySettings, []string{"/password_policy", `{}`}, []problem{
			{"/password_policy/min_length", "required"}, {"/password_policy/require_digits", "required"}, {"/password_policy/require_symbols", "required"}}},
		{"mfa unknown", KindIdentitySettings, []string{"/mfa", `"sometimes"`}, []problem{{"/mfa", "not_allowed"}}},
		{"mfa absent", KindIdentitySettings, []string{"/mfa", absent}, []problem{{"/mfa", "required"}}},

		// attack_protection
		{"max_attempts 0", KindAttackProtection, []string{"/brute_force/max_attempts", `0`}, []problem{{"/brute_force/max_attempts", "out_of_range"}}},
		{"max_attempts 101", KindAttackProtection, []string{"/brute_force/max_attempts", `101`}, []problem{{"/brute_force/max_attempts", "out_of_range"}}},
		{"brute_force enabled absent", KindAttackProtection, []string{"/brute_force/enabled", absent}, []problem{{"/brute_force/enabled", "required"}}},
		{"breached absent", KindAttackProtection, []string{"/breached_password_detection", absent}, []problem{{"/breached_password_detection", "required"}}},
		{"breached enabled absent", KindAttackProtection, []string{"/breached_password_detection", `{}`}, []problem{{"/breached_password_detection/enabled", "required"}}},
		{"bot_detection unknown", KindAttackProtection, []string{"/bot_detection", `"medium"`}, []problem{{"/bot_detection", "not_allowed"}}},

		// branding and application_branding
		{"primary_color absent", KindBranding, []string{"/primary_color", absent}, []problem{{"/primary_color", "required"}}},
		{"primary_color named", KindBranding, []string{"/primary_color", `"red"`}, []problem{{"/primary_color", "invalid"}}},
		{"primary_color short", KindApplicationBranding, []string{"/primary_color", `"#fff"`}, []problem{{"/primary_color", "invalid"}}},
		{"background invalid", KindBranding, []string{"/page_background_color", `"#12345g"`}, []problem{{"/page_background_color", "invalid"}}},
		{"logo http", KindBranding, []string{"/logo_url", `"http://cdn.example/logo.png"`}, []problem{{"/logo_url", "invalid"}}},
		{"logo relative", KindApplicationBranding, []string{"/logo_url", `"/logo.png"`}, []problem{{"/logo_url", "invalid"}}},
		{"logo with credentials", KindBranding, []string{"/logo_url", `"https://u:p@cdn.example/l.png"`}, []problem{{"/logo_url", "invalid"}}},
		{"logo too long", KindBranding, []string{"/logo_url", `"https://cdn.example/` + strings.Repeat("a", 2048) + `"`}, []problem{{"/logo_url", "too_long"}}},

		// connection
		{"type unknown", KindConnection, []string{"/type", `"ldap"`}, []problem{{"/type", "not_allowed"}}},
		{"type absent", KindConnection, []string{"/type", absent}, []problem{{"/type", "required"}}},
		{"active absent", KindConnection, []string{"/active", absent}, []problem{{"/active", "required"}}},
		{"connection display_name empty", KindConnection, []string{"/display_name", `""`}, []problem{{"/display_name", "too_short"}}},
		{"enterprise without oidc", KindConnection, []string{"/oidc", absent}, []problem{{"/oidc", "required"}}},
		{"enterprise with null oidc", KindConnection, []string{"/oidc", `null`}, nil},
		{"enterprise with database", KindConnection, []string{"/database", `{"requires_username": false}`}, []problem{{"/database", "type_mismatch"}}},
		{"database with oidc and social", KindConnection, []string{"/type", `"database"`,
			"/social", `{"provider": "github", "use_own_credentials": false}`}, []problem{
			{"/database", "required"}, {"/oidc", "type_mismatch"}, {"/social", "type_mismatch"}}},
		{"database ok", KindConnection, []string{"/type", `"database"`, "/oidc", absent,
			"/database", `{"requires_username": true, "min_password_length": 128}`}, nil},
		{"database min_password_length 7", KindConnection, []string{"/type", `"database"`, "/oidc", absent,
			"/database", `{"requires_username": true, "min_password_length": 7}`}, []problem{{"/database/min_password_length", "out_of_range"}}},
		{"database requires_username absent", KindConnection, []string{"/type", `"database"`, "/oidc", absent,
			"/database", `{}`}, []problem{{"/database/requires_username", "required"}}},
		{"social with null oidc", KindConnection, []string{"/type", `"social"`, "/oidc", `null`,
			"/social", `{"provider": "github", "use_own_credentials": false}`}, []problem{{"/oidc", "type_mismatch"}}},
		{"social provider unknown", KindConnection, []string{"/type", `"social"`, "/oidc", absent,
			"/social", `{"provider": "facebook", "use_own_credentials": false}`}, []problem{{"/social/provider", "not_allowed"}}},
		{"social own credentials without client_id", KindConnection, []string{"/type", `"social"`, "/oidc", absent,
			"/social", `{"provider": "apple", "use_own_credentials": true}`}, []problem{{"/social/client_id", "required"}}},
		{"social client_id without own credentials", KindConnection, []string{"/type", `"social"`, "/oidc", absent,
			"/social", `{"provider": "microsoft", "use_own_credentials": false, "client_id": "x"}`}, []problem{{"/social/client_id", "not_allowed"}}},
		{"social empty client_id", KindConnection, []string{"/type", `"social"`, "/oidc", absent,
			"/social", `{"provider": "google", "use_own_credentials": true, "client_id": ""}`}, []problem{{"/social/client_id", "too_short"}}},
		{"social members absent", KindConnection, []string{"/type", `"social"`, "/oidc", absent, "/social", `{}`}, []problem{
			{"/social/provider", "required"}, {"/social/use_own_credentials", "required"}}},
		{"oidc issuer http", KindConnection, []string{"/oidc/issuer", `"http://idp.acme.example"`}, []problem{{"/oidc/issuer", "invalid"}}},
		{"oidc issuer absent", KindConnection, []string{"/oidc/issuer", absent}, []problem{{"/oidc/issuer", "required"}}},
		{"oidc client_id empty", KindConnection, []string{"/oidc/client_id", `""`}, []problem{{"/oidc/client_id", "too_short"}}},
		{"oidc client_id 257", KindConnection, []string{"/oidc/client_id", long(257)}, []problem{{"/oidc/client_id", "too_long"}}},
		{"oidc scopes empty", KindConnection, []string{"/oidc/scopes", `[]`}, []problem{{"/oidc/scopes", "too_short"}}},
		{"oidc scopes absent", KindConnection, []string{"/oidc/scopes", absent}, []problem{{"/oidc/scopes", "required"}}},
		{"oidc scopes without openid", KindConnection, []string{"/oidc/scopes", `["email", "profile"]`}, []problem{{"/oidc/scopes", "must_include_openid"}}},
		{"oidc scopes repeated", KindConnection, []string{"/oidc/scopes", `["openid", "email", "openid"]`}, []problem{{"/oidc/scopes/2", "duplicate"}}},
		{"oidc scope with a space", KindConnection, []string{"/oidc/scopes", `["openid", "a b", ""]`}, []problem{
			{"/oidc/scopes/1", "invalid"}, {"/oidc/scopes/2", "too_short"}}},

		// api
		{"identifier not absolute", KindAPI, []string{"/identifier", `"orders"`}, []problem{{"/identifier", "invalid"}}},
		{"identifier urn", KindAPI, []string{"/identifier", `"urn:shop:orders"`}, nil},
		{"identifier with space", KindAPI, []string{"/identifier", `"https://api.example/a b"`}, []problem{{"/identifier", "invalid"}}},
		{"identifier 257", KindAPI, []string{"/identifier", `"https://a.example/` + strings.Repeat("a", 239) + `"`}, []problem{{"/identifier", "too_long"}}},
		{"identifier absent", KindAPI, []string{"/identifier", absent}, []problem{{"/identifier", "required"}}},
		{"api display_name absent", KindAPI, []string{"/display_name", absent}, []problem{{"/display_name", "required"}}},
		{"token lifetime 59", KindAPI, []string{"/token_lifetime_seconds", `59`}, []problem{{"/token_lifetime_seconds", "out_of_range"}}},
		{"token lifetime 86401", KindAPI, []string{"/token_lifetime_seconds", `86401`}, []problem{{"/token_lifetime_seconds", "out_of_range"}}},
		{"scope value with space", KindAPI, []string{"/scopes/0/value", `"read orders"`}, []problem{{"/scopes/0/value", "invalid"}}},
		{"scope value 129", KindAPI, []string{"/scopes/0/value", long(129)}, []problem{{"/scopes/0/value", "too_long"}}},
		{"scope value absent", KindAPI, []string{"/scopes/0/value", absent}, []problem{{"/scopes/0/value", "required"}}},
		{"scope description 257", KindAPI, []string{"/scopes/0/description", long(257)}, []problem{{"/scopes/0/description", "too_long"}}},
		{"scope values repeated", KindAPI, []string{"/scopes", `[{"value": "a"}, {"value": "b"}, {"value": "a", "description": "again"}]`},
			[]problem{{"/scopes/2/value", "duplicate"}}},

		// role
		{"role display_name absent", KindRole, []string{"/display_name", absent}, []problem{{"/display_name", "required"}}},
		{"role display_name with a joiner that joins", KindRole, []string{"/display_name", `"\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"`}, nil},
		{"role display_name with a joiner at the start", KindRole, []string{"/display_name", `"\u200cAdmin"`}, []problem{{"/display_name", "invalid"}}},
		{"role description 257", KindRole, []string{"/description", long(257)}, []problem{{"/description", "too_long"}}},
		{"permission api invalid", KindRole, []string{"/permissions/0/api", `"Orders"`}, []problem{{"/permissions/0/api", "invalid"}}},
		{"permission scope absent", KindRole, []string{"/permissions/0/scope", absent}, []problem{{"/permissions/0/scope", "required"}}},
		{"permission repeated", KindRole, []string{"/permissions", `[{"api": "a", "scope": "s"}, {"api": "a", "scope": "t"}, {"api": "a", "scope": "s"}]`},
			[]problem{{"/permissions/2", "duplicate"}}},

		// application
		{"application type unknown", KindApplication, []string{"/type", `"tv"`}, []problem{{"/type", "not_allowed"}}},
		{"application display_name 129", KindApplication, []string{"/display_name", long(129)}, []problem{{"/display_name", "too_long"}}},
		{"callbacks on localhost", KindApplication, []string{"/callback_urls", `["http://localhost/cb", "http://localhost:3000/cb", "http://LOCALHOST:1/"]`}, nil},
		{"callback http", KindApplication, []string{"/callback_urls", `["https://ok.example/cb", "http://portal.example/cb"]`}, []problem{{"/callback_urls/1", "invalid"}}},
		{"callback localhost lookalike", KindApplication, []string{"/callback_urls", `["http://localhost.evil.example/cb"]`}, []problem{{"/callback_urls/0", "invalid"}}},
		{"callback with fragment", KindApplication, []string{"/callback_urls", `["https://portal.example/cb#x"]`}, []problem{{"/callback_urls/0", "invalid"}}},
		{"callback custom scheme", KindApplication, []string{"/callback_urls", `["com.example.app:/cb"]`}, []problem{{"/callback_urls/0", "invalid"}}},
		{"callbacks repeated", KindApplication, []string{"/callback_urls", `["https://a.example/cb", "https://a.example/cb"]`}, []problem{{"/callback_urls/1", "duplicate"}}},
		{"100 callbacks", KindApplication, []string{"/callback_urls", many(100, func(i int) string { return fmt.Sprintf(`"https://a.example/%d"`, i) })}, nil},
		{"101 callbacks", KindApplication, []string{"/callback_urls", many(101, func(i int) string { return fmt.Sprintf(`"https://a.example/%d"`, i) })},
			[]problem{{"/callback_urls", "too_long"}}},
		{"connection key invalid", KindApplication, []string{"/connections", `["ok", "Not OK"]`}, []problem{{"/connections/1", "invalid"}}},
		{"connections repeated", KindApplication, []string{"/connections", `["a", "b", "a"]`}, []problem{{"/connections/2", "duplicate"}}},
		{"grant api repeated", KindApplication, []string{"/api_grants", `[{"api": "o", "scopes": ["a"]}, {"api": "o", "scopes": ["b"]}]`},
			[]problem{{"/api_grants/1/api", "duplicate"}}},
		{"grant scopes empty", KindApplication, []string{"/api_grants/0/scopes", `[]`}, []problem{{"/api_grants/0/scopes", "too_short"}}},
		{"grant scopes absent", KindApplication, []string{"/api_grants/0/scopes", absent}, []problem{{"/api_grants/0/scopes", "required"}}},
		{"grant scopes repeated", KindApplication, []string{"/api_grants/0/scopes", `["a", "a"]`}, []problem{{"/api_grants/0/scopes/1", "duplicate"}}},
		{"grant api absent", KindApplication, []string{"/api_grants/0/api", absent}, []problem{{"/api_grants/0/api", "required"}}},

		// every problem of one spec at once
		{"many problems", KindApplication, []string{"/display_name", `""`, "/type", `"tv"`,
			"/callback_urls", `["http://x.example", "ftp://y.example"]`, "/connections", `["A", "A"]`}, []problem{
			{"/callback_urls/0", "invalid"}, {"/callback_urls/1", "invalid"},
			{"/connections/0", "invalid"}, {"/connections/1", "invalid"},
			{"/display_name", "too_short"}, {"/type", "not_allowed"},
			{"/connections/1", "duplicate"}}},
	}
}

func TestSpecRules(t *testing.T) {
	t.Parallel()
	for _, tt := range specRuleCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := edit(t, tt.kind, tt.edits...)
			_, err := NormalizeSpec(tt.kind, spec)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("NormalizeSpec(%s): %v", spec, err)
				}
				return
			}
			e := badRequestOf(t, err)
			if e.Code != "validation_failed" {
				t.Fatalf("code = %q, want validation_failed: %v", e.Code, e.Errors)
			}
			if diff := cmp.Diff(tt.want, problemsOf(t, e.Errors)); diff != "" {
				t.Errorf("problems of %s (-want +got):\n%s", spec, diff)
			}
		})
	}
}

func TestSpecProblemsInDocumentArePrefixed(t *testing.T) {
	t.Parallel()
	doc := `{"connections": {"acme-sso": ` + string(edit(t, KindConnection, "/oidc/issuer", `"ftp://x"`)) + `}}`
	_, problems, err := DecodeDocument(json.RawMessage(doc), "/config")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]problem{{"/config/connections/acme-sso/oidc/issuer", "invalid"}}, problemsOf(t, problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestNamespacePointer(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"applicationSpec.display_name":             "/display_name",
		"applicationSpec.api_grants[0].scopes[12]": "/api_grants/0/scopes/12",
		"connectionSpec.oidc.scopes[1]":            "/oidc/scopes/1",
		"roleSpec":                                 "",
	}
	for ns, want := range tests {
		if got := namespacePointer(ns); got != want {
			t.Errorf("namespacePointer(%q) = %q, want %q", ns, got, want)
		}
	}
}

func TestDisplayNameWithAnInvisibleOrControlCharacterIsInvalid(t *testing.T) {
	t.Parallel()
	kinds := []Kind{KindEnvironmentSettings, KindConnection, KindAPI, KindRole, KindApplication}
	for _, kind := range kinds {
		for _, name := range []string{"Main\u200b", "\ufeffMain", "Ma\u202ein", "Ma\u00adin", "Main\n", "Ma\tin", "Main\u007f"} {
			spec := edit(t, kind, "/display_name", mustJSONString(name))
			e := badRequestOf(t, func() error { _, err := NormalizeSpec(kind, spec); return err }())
			if diff := cmp.Diff([]problem{{"/display_name", "invalid"}}, problemsOf(t, e.Errors)); diff != "" {
				t.Errorf("%s %q (-want +got):\n%s", kind, name, diff)
			}
		}
		for _, name := range []string{"Main DB", "Caf\u00e9", "Cafe\u0301", "東京", "می\u200cخواهم", "क्\u200dष", "Team 👩\u200d💻"} {
			if _, err := NormalizeSpec(kind, edit(t, kind, "/display_name", mustJSONString(name))); err != nil {
				t.Errorf("%s %q: %v", kind, name, err)
			}
		}
	}
	// The one kind with a display_name that is not in this list would be a
	// kind whose names escape the rule.
	for _, info := range Kinds {
		s, _ := newSpec(info.Kind)
		if _, has := jsonFields(specType(s))["display_name"]; has && !slices.Contains(kinds, info.Kind) {
			t.Errorf("%s has a display_name this test does not check", info.Kind)
		}
	}
}

// A misplaced joiner is invalid as any other Cf character is, and every
// such detail names the character and its position (§24).
func TestDisplayNameWithAJoinerThatDoesNotJoinIsInvalid(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, detail string }{
		{"\u200cمی", "display_name must not hold U+200C at character 1 (at the start): a joiner must stand between two letters or combining marks (U+200D also between two emoji)."},
		{"می\u200c", "display_name must not hold U+200C at character 3 (at the end): a joiner must stand between two letters or combining marks (U+200D also between two emoji)."},
		{"می\u200c\u200cخواهم", "display_name must not hold U+200C at character 3 (doubled): a joiner must stand between two letters or combining marks (U+200D also between two emoji)."},
		{"Team \u200d👩", "display_name must not hold U+200D at character 6 (beside a space): a joiner must stand between two letters or combining marks (U+200D also between two emoji)."},
		{"Team\u200d1", "display_name must not hold U+200D at character 5 (beside a digit): a joiner must stand between two letters or combining marks (U+200D also between two emoji)."},
		{"👩\u200c💻", "display_name must not hold U+200C at character 2 (where it does not join): a joiner must stand between two letters or combining marks (U+200D also between two emoji)."},
		{"Main\u200b", "display_name must not hold an invisible format or control character (it holds U+200B at character 5)."},
		{"Ma\u2060in", "display_name must not hold an invisible format or control character (it holds U+2060 at character 3)."},
	} {
		e := badRequestOf(t, func() error {
			_, err := NormalizeSpec(KindRole, edit(t, KindRole, "/display_name", mustJSONString(tt.name)))
			return err
		}())
		if diff := cmp.Diff([]problem{{"/display_name", "invalid"}}, problemsOf(t, e.Errors)); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.name, diff)
			continue
		}
		if e.Errors[0].Detail != tt.detail {
			t.Errorf("%q: detail %q, want %q", tt.name, e.Errors[0].Detail, tt.detail)
		}
	}
}

func TestDefaultSingletonsKeepTheJoinersThatJoin(t *testing.T) {
	t.Parallel()
	for envName, want := range map[string]string{
		"می\u200cخواهم":             "می\u200cخواهم",
		"\u200dTeam 👩\u200d💻\u200c": "Team 👩\u200d💻",
		"Shop \u200c\u200b":         "Shop",
		// Cut at 128 characters, the name would end in its joiner.
		strings.Repeat("a", 127) + "\u200cb": strings.Repeat("a", 127),
	} {
		spec := DefaultSingletons(envName)[KindEnvironmentSettings]
		if _, err := NormalizeSpec(KindEnvironmentSettings, spec); err != nil {
			t.Errorf("%q: the default environment_settings are not valid: %v", envName, err)
			continue
		}
		var s struct {
			DisplayName string `json:"display_name"`
		}
		if err := json.Unmarshal(spec, &s); err != nil || s.DisplayName != want {
			t.Errorf("%q: display_name = %q (%v), want %q", envName, s.DisplayName, err, want)
		}
	}
}

func TestDefaultSingletonsDropInvisibleCharactersOfTheEnvironmentName(t *testing.T) {
	t.Parallel()
	spec := DefaultSingletons("\u200bShop\u202e\n")[KindEnvironmentSettings]
	if _, err := NormalizeSpec(KindEnvironmentSettings, spec); err != nil {
		t.Fatalf("the default environment_settings are not valid: %v", err)
	}
	var s struct {
		DisplayName string `json:"display_name"`
	}
	if err := json.Unmarshal(spec, &s); err != nil || s.DisplayName != "Shop" {
		t.Fatalf("display_name = %q (%v), want Shop", s.DisplayName, err)
	}
}

func mustJSONString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
