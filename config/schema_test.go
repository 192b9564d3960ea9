package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ConfigSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("config-schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("config-schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return sch
}

func schemaValid(t *testing.T, sch *jsonschema.Schema, body string) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		t.Fatalf("fixture %s: %v", body, err)
	}
	return sch.Validate(v)
}

// inDocument is a plan request planning spec as the one resource of its
// kind.
func inDocument(kind Kind, spec string) string {
	info, _ := LookupKind(kind)
	if info.Singleton {
		return fmt.Sprintf(`{"config": {%q: %s}}`, info.DocKey, spec)
	}
	return fmt.Sprintf(`{"config": {%q: {"main": %s}}}`, info.DocKey, spec)
}

// beyondSchema are the rule cases whose refusal a JSON Schema cannot say
// (see ConfigSchema): the schema accepts them and plan creation does not.
var beyondSchema = map[string]bool{
	"idle above session":    true, // a bound that is another member's value
	"scope values repeated": true, // unique by value, the elements differ
	"grant api repeated":    true, // unique by api, the elements differ
	// Where a joiner stands is beyond a pattern both ECMA-262 and Go's
	// regexp read (no lookbehind in Go's).
	"role display_name with a joiner at the start": true,
}

// Every case of the validator's rules: a spec it accepts validates against
// the schema, and one it refuses does not (but for the few a schema cannot
// say).
func TestConfigSchemaAgreesWithTheValidator(t *testing.T) {
	t.Parallel()
	sch := compiledSchema(t)
	for _, tt := range specRuleCases() {
		body := inDocument(tt.kind, string(edit(t, tt.kind, tt.edits...)))
		err := schemaValid(t, sch, body)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: the validator accepts %s, the schema does not: %v", tt.name, body, err)
		case tt.want != nil && !beyondSchema[tt.name] && err == nil:
			t.Errorf("%s: the validator refuses %s (%v), the schema accepts it", tt.name, body, tt.want)
		case tt.want != nil && beyondSchema[tt.name] && err != nil:
			t.Errorf("%s: listed as beyond the schema, but the schema refuses it; drop it from beyondSchema", tt.name)
		}
	}
	for kind, spec := range validSpecs {
		if err := schemaValid(t, sch, inDocument(kind, spec)); err != nil {
			t.Errorf("valid %s: %v", kind, err)
		}
	}
	for kind, spec := range DefaultSingletons("Shop") {
		if err := schemaValid(t, sch, inDocument(kind, string(spec))); err != nil {
			t.Errorf("default %s: %v", kind, err)
		}
	}
}

func TestConfigSchemaOfTheRequest(t *testing.T) {
	t.Parallel()
	sch := compiledSchema(t)
	spec := `{"config": {
	  "environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 72},
	  "connections": {
	    "legacy":   null,
	    "acme-sso": {"type": "enterprise", "display_name": "ACME", "active": false,
	                 "oidc": {"issuer": "https://idp.acme.example", "client_id": "abc", "scopes": ["openid", "email"]}},
	    "old-sso":  {"type": "enterprise", "display_name": "Old", "active": true, "oidc": null},
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
	valid := []string{
		spec + `}`, // the document of SPEC §4
		spec + `, "prune": true, "$schema": "https://keenauth.example/v1/config-schema.json"}`,
		spec + `, "versions": {"api/orders": 3, "connection/acme-sso": 1, "environment_settings/default": 2}}`,
	}
	for _, body := range valid {
		if err := schemaValid(t, sch, body); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	invalid := map[string]string{
		"no config":              `{"prune": true}`,
		"an unknown member":      `{"config": {"apis": {}}, "dry_run": true}`,
		"an unknown type":        `{"config": {"widgets": {}}}`,
		"an empty document":      `{"config": {}}`,
		"prune not a boolean":    `{"config": {"apis": {}}, "prune": "yes"}`,
		"a bad key":              `{"config": {"apis": {"Orders": null}}}`,
		"a singleton deleted":    `{"config": {"branding": null}}`,
		"$schema not a string":   `{"config": {"apis": {}}, "$schema": 1}`,
		"versions: no kind":      `{"config": {"apis": {}}, "versions": {"orders": 1}}`,
		"versions: unknown kind": `{"config": {"apis": {}}, "versions": {"widget/x": 1}}`,
		"versions: zero":         `{"config": {"apis": {}}, "versions": {"api/orders": 0}}`,
		"versions: a string":     `{"config": {"apis": {}}, "versions": {"api/orders": "3"}}`,
	}
	for name, body := range invalid {
		if err := schemaValid(t, sch, body); err == nil {
			t.Errorf("%s: %s validates", name, body)
		}
	}
	// An unknown member anywhere in a spec, and a wrong JSON type.
	for kind, spec := range validSpecs {
		var m map[string]any
		if err := json.Unmarshal([]byte(spec), &m); err != nil {
			t.Fatal(err)
		}
		m["colour"] = "blue"
		b, _ := json.Marshal(m)
		if err := schemaValid(t, sch, inDocument(kind, string(b))); err == nil {
			t.Errorf("%s with an unknown member validates", kind)
		}
	}
	for _, tt := range []struct {
		kind  Kind
		edits []string
	}{
		{KindEnvironmentSettings, []string{"/session_lifetime_hours", `"72"`}},
		{KindEnvironmentSettings, []string{"/session_lifetime_hours", `72.5`}},
		{KindConnection, []string{"/active", `"yes"`}},
		{KindConnection, []string{"/oidc/extra", `1`}},
		{KindAPI, []string{"/scopes", `{"value": "a"}`}},
		{KindApplication, []string{"/connections", `"acme-sso"`}},
		{KindRole, []string{"/display_name", `"Main\u200b"`}},
		{KindConnection, []string{"/display_name", `"Main\n"`}},
	} {
		if err := schemaValid(t, sch, inDocument(tt.kind, string(edit(t, tt.kind, tt.edits...)))); err == nil {
			t.Errorf("%s %v validates", tt.kind, tt.edits)
		}
	}
}
