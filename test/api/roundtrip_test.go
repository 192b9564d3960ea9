package api_test

import (
	"testing"

	"github.com/keenauth/configplans/test/apitest"
)

// TestExampleRoundTrip plans and applies the §4 example, then plans the
// export again: every change is a no_op.
func TestExampleRoundTrip(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(apitest.ExampleDocument(), false)
	if got := p["required_secrets"].([]any); len(got) != 1 || got[0] != "KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET" {
		t.Fatalf("required_secrets = %v", got)
	}
	applied := e.Apply(p["id"].(string), map[string]any{
		"resolved_secrets": map[string]any{"KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET": "s3cret"},
		"sp_host":          "login.shop.example",
	})
	if applied["status"] != "applied" || applied["revision_id"] == nil {
		t.Fatalf("applied plan = %v", applied)
	}
	cfg, _ := e.Export()
	again := e.Plan(cfg, false)
	sum := again["summary"].(map[string]any)
	if sum["create"] != 0.0 || sum["update"] != 0.0 || sum["delete"] != 0.0 {
		t.Fatalf("re-plan of the export is not all no_op: %v\n%s", sum, again["changes"])
	}
}

// Markup in a value (<, >, &) round-trips: planned again, unchanged, it is a
// no_op, on every kind that holds text; and a spec stored with those
// characters escaped (\u003c), as the service once wrote them, is the same
// spec, not an update with an empty diff.
func TestMarkupInValuesRoundTrips(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	markup := "<img src=x onerror=alert(1)> & co"
	doc := map[string]any{
		"roles": map[string]any{"r": map[string]any{"display_name": markup, "description": markup}},
		"connections": map[string]any{"c": map[string]any{"type": "social", "display_name": markup, "active": true,
			"social": map[string]any{"provider": "github", "use_own_credentials": false}}},
		"apis": map[string]any{"a": map[string]any{"identifier": "https://api.example/<a>&b", "display_name": markup,
			"token_lifetime_seconds": 3600, "scopes": []any{map[string]any{"value": "read:a", "description": markup}}}},
		"environment_settings": map[string]any{"display_name": markup, "default_locale": "en", "session_lifetime_hours": 72},
	}
	e.Apply(e.Plan(doc, false)["id"].(string), map[string]any{})
	allNoOp := func(p map[string]any) {
		t.Helper()
		for _, c := range p["changes"].([]any) {
			c := c.(map[string]any)
			if c["action"] != "no_op" {
				t.Errorf("%s/%s: %s with diff %v", c["kind"], c["key"], c["action"], c["diff"])
			}
		}
	}
	allNoOp(e.Plan(doc, false))
	cfg, _ := e.Export()
	allNoOp(e.Plan(cfg, false))
	if r := e.DB.DB.Exec(`UPDATE resources SET spec = ? WHERE environment_id = ? AND kind = 'role' AND key = 'r'`,
		`{"description":"\u003cimg src=x onerror=alert(1)\u003e \u0026 co","display_name":"\u003cimg src=x onerror=alert(1)\u003e \u0026 co","permissions":[]}`,
		e.EnvID); r.Error != nil || r.RowsAffected != 1 {
		t.Fatalf("store an escaped spec: %v (%d rows)", r.Error, r.RowsAffected)
	}
	allNoOp(e.Plan(doc, false))
}
