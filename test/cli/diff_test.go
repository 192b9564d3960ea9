package cli_test

import (
	"strings"
	"testing"
)

// diffBase is the configuration the readable-diff test changes: an api
// with one scope, two social connections and two applications.
func diffBase() map[string]any {
	doc := noSecretDocument()
	delete(doc, "environment_settings")
	doc["connections"].(map[string]any)["google"] = map[string]any{"type": "social", "display_name": "Google", "active": true,
		"social": map[string]any{"provider": "google", "use_own_credentials": false}}
	apps := doc["applications"].(map[string]any)
	apps["portal"].(map[string]any)["connections"] = []any{"github", "google"}
	apps["admin"] = map[string]any{"display_name": "Admin", "type": "spa",
		"callback_urls": []any{"https://admin.shop.example/a", "https://admin.shop.example/b"}}
	return doc
}

// TestReadableDiffShowsBothSidesOfEveryChange plans changes of every sort
// against diffBase: old → new on every changed field, element-level lines
// for lists whose elements have an identity, one replace for a list whose
// kept elements changed order, and a deletion spelled out.
func TestReadableDiffShowsBothSidesOfEveryChange(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.Apply(h.Plan(diffBase(), false)["id"].(string), map[string]any{})

	doc := diffBase()
	doc["identity_settings"] = map[string]any{"allowed_identifiers": []any{"username", "email"},
		"password_policy": map[string]any{"min_length": 8, "require_digits": false, "require_symbols": false}, "mfa": "required"}
	doc["apis"].(map[string]any)["orders"].(map[string]any)["scopes"] = []any{
		map[string]any{"value": "read:orders", "description": "Read every order"}, map[string]any{"value": "write:orders"}}
	portal := doc["applications"].(map[string]any)["portal"].(map[string]any)
	portal["connections"] = []any{"google"}
	portal["callback_urls"] = []any{"https://portal.shop.example/callback", "http://localhost:3000/callback"}
	portal["api_grants"] = []any{map[string]any{"api": "orders", "scopes": []any{"read:orders", "write:orders"}}}
	admin := doc["applications"].(map[string]any)["admin"].(map[string]any)
	admin["callback_urls"] = []any{"https://admin.shop.example/b", "https://admin.shop.example/a"}
	doc["connections"].(map[string]any)["github"] = nil

	planned := must(t, h.run(t, "config", "plan", "-f", writeJSON(t, "changes.json", doc)))
	golden(t, "diff", transcript(planned))
	for _, want := range []string{
		`~ mfa: "optional" → "required"`,
		`- connections[0]: "github"`,
		`+ allowed_identifiers[0]: "username"`,
		`~ callback_urls: ["https://admin.shop.example/a","https://admin.shop.example/b"] → ["https://admin.shop.example/b","https://admin.shop.example/a"]`,
		`- social.provider: "github"`,
	} {
		if !strings.Contains(planned.stdout, want) {
			t.Errorf("the diff lacks %q:\n%s", want, planned.stdout)
		}
	}
}
