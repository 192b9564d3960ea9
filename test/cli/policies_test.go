package cli_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// TestPoliciesShowPrintsThePoliciesAndRulesInForce (§18): keenauth
// policies show prints every policy with its value or default and every
// rule; --json prints the API's answer unchanged; a key without
// config:read is refused (exit 1).
func TestPoliciesShowPrintsThePoliciesAndRulesInForce(t *testing.T) {
	t.Parallel()
	h := setup(t)
	none := must(t, h.run(t, "policies", "show"))
	r := h.Do(apitest.Request{Method: "PUT", Path: "/internal/v1/environments/" + h.EnvID + "/policies", Secret: apitest.InternalToken,
		Body: map[string]any{"mfa_required": true, "min_password_length": 12, "allowed_callback_hosts": []string{"*.shop.example"}, "required_approvals": 1,
			"rules": []any{
				map[string]any{"name": "mfa-stays-required", "when": "change.kind == 'identity_settings' && new.mfa != 'required'",
					"enforcement": "block", "message": "MFA stays required."},
				map[string]any{"name": "api-deletion", "when": "change.kind == 'api' && change.action == 'delete'",
					"enforcement": "approval", "approvals": 2, "message": "Deleting an api needs two approvals."},
				map[string]any{"name": "long-tokens", "when": "change.kind == 'api' && new.token_lifetime_seconds > 3600",
					"enforcement": "warn", "message": "A token lifetime above an hour."},
			}}})
	if r.Status != http.StatusOK {
		t.Fatalf("put policies: %d %s", r.Status, r.Body)
	}
	some := must(t, h.run(t, "policies", "show"))
	refused := h.runWith(t, invocation{env: map[string]string{"KEENAUTH_SECRET_KEY": h.Key(config.PermConfigWrite)}}, "policies", "show")
	wantExit(t, refused, 1)
	golden(t, "policies", transcript(none, some, refused))

	// A plan shows the rules it tripped, by name.
	doc := writeJSON(t, "api.json", map[string]any{"config": map[string]any{"apis": map[string]any{"orders": map[string]any{
		"display_name": "Orders", "identifier": "https://api.shop.example/orders", "token_lifetime_seconds": 7200}}}})
	plan := must(t, h.run(t, "config", "plan", "-f", doc))
	if !strings.Contains(plan.stdout, "api/orders: A token lifetime above an hour (rule_warning long-tokens)") {
		t.Errorf("config plan does not show the rule it tripped:\n%s", plan.stdout)
	}

	rec := h.recorder(t)
	asJSON := must(t, h.runWith(t, invocation{env: map[string]string{"KEENAUTH_API_URL": rec.URL}}, "policies", "show", "--json"))
	if want := string(rec.body["GET /v1/config-policies"]) + "\n"; asJSON.stdout != want {
		t.Errorf("policies show --json printed\n%s\nthe API answered\n%s", asJSON.stdout, want)
	}
	if rules := asJSON.JSON(t)["rules"].([]any); len(rules) != 3 {
		t.Errorf("rules %v", rules)
	}
}
