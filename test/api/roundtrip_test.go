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
