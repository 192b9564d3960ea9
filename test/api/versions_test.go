package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/test/apitest"
)

// exportedPlanBody is {"config", "versions"} as the export answers it: the
// body of export → plan.
func exportedPlanBody(e *apitest.Env) map[string]any {
	cfg, vers := e.Export()
	return map[string]any{"config": cfg, "versions": vers}
}

// changeOrders plans and applies a new display name of api/orders.
func changeOrders(t *testing.T, e *apitest.Env, name string) {
	t.Helper()
	p := e.Plan(docOf(t, `{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "`+name+`",
	  "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600}}}`), false)
	e.Apply(p["id"].(string), map[string]any{})
}

// TestPlanWithTheVersionsOfItsExport plans an export as it is, versions
// included: nothing moved, so it is planned (all no_op).
func TestPlanWithTheVersionsOfItsExport(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(docOf(t, validDoc), false)
	e.Apply(p["id"].(string), map[string]any{"confirm_deletions": []string{}})

	body := exportedPlanBody(e)
	if len(body["versions"].(map[string]any)) == 0 {
		t.Fatalf("the export lists no versions: %v", body)
	}
	r := postPlan(e, "", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("plan of the export: %d %s", r.Status, r.Body)
	}
	if got := r.JSON()["summary"].(map[string]any); got["no_op"] == 0.0 || got["create"] != 0.0 || got["update"] != 0.0 {
		t.Errorf("summary = %v, want no_op only", got)
	}
	// An empty or null versions member checks nothing.
	for _, versions := range []any{map[string]any{}, nil} {
		body["versions"] = versions
		if r := postPlan(e, "", body); r.Status != http.StatusCreated {
			t.Errorf("versions %v: %d %s", versions, r.Status, r.Body)
		}
	}
}

// TestPlanRefusedWhenAListedVersionMoved edits an export after the
// configuration changed: every moved resource, a deleted one included, is
// one version_changed error of a 409 config_conflict, and nothing is stored.
// Without versions the same document is planned.
func TestPlanRefusedWhenAListedVersionMoved(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(docOf(t, validDoc), false)
	e.Apply(p["id"].(string), map[string]any{})

	body := exportedPlanBody(e)
	// After the export: api/orders changes (1 → 2) and the database
	// connection db is deleted (with the application that used it).
	changeOrders(t, e, "Orders v2")
	del := e.Plan(docOf(t, `{"applications": {"portal": null}, "connections": {"db": null}}`), false)
	e.Apply(del["id"].(string), map[string]any{"confirm_deletions": []string{"connection/db"}})

	cfg := body["config"].(map[string]any)
	cfg["apis"].(map[string]any)["orders"].(map[string]any)["display_name"] = "Orders (edited)"
	before, _ := storedPlanRows(t, e)
	r := postPlan(e, "", body)
	prob := expectProblem(t, r, http.StatusConflict, "config_conflict")
	expectErrors(t, prob, "/versions/api~1orders version_changed", "/versions/connection~1db version_changed",
		"/versions/application~1portal version_changed")
	details := map[string]string{}
	for _, fe := range prob.Errors {
		details[fe.Pointer] = fe.Detail
	}
	if d := details["/versions/api~1orders"]; !strings.Contains(d, "version 1") || !strings.Contains(d, "version 2") {
		t.Errorf("detail %q does not name both versions", d)
	}
	if d := details["/versions/connection~1db"]; !strings.Contains(d, "version 1") || !strings.Contains(d, "no longer exists") {
		t.Errorf("detail %q does not say the listed version and that it is gone", d)
	}
	if after, _ := storedPlanRows(t, e); after != before {
		t.Errorf("a refused plan was stored: %d plans, then %d", before, after)
	}

	// Only the listed resources count: listing the unchanged ones alone plans.
	vers := body["versions"].(map[string]any)
	delete(vers, "api/orders")
	delete(vers, "connection/db")
	delete(vers, "application/portal")
	delete(cfg, "connections")
	delete(cfg, "applications")
	if r := postPlan(e, "", body); r.Status != http.StatusCreated {
		t.Errorf("versions that did not move: %d %s", r.Status, r.Body)
	}
	delete(body, "versions")
	if r := postPlan(e, "", body); r.Status != http.StatusCreated {
		t.Errorf("without versions: %d %s", r.Status, r.Body)
	}
}

// TestPlanVersionsMalformed sends every versions member that is not
// <kind>/<key> of a known kind mapped to a positive integer: 400
// malformed_request at that member, before anything else is checked.
func TestPlanVersionsMalformed(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	cfg := `{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders", "token_lifetime_seconds": 3600}}}`
	tests := []struct {
		name     string
		versions string
		code     string
		errors   []string
	}{
		{"a bare key", `{"orders": 1}`, "malformed_request", []string{"/versions/orders malformed_request"}},
		{"an unknown kind", `{"widget/x": 1}`, "malformed_request", []string{"/versions/widget~1x malformed_request"}},
		{"a document key, not a kind", `{"apis/orders": 1}`, "malformed_request", []string{"/versions/apis~1orders malformed_request"}},
		{"a key out of form", `{"api/Orders": 1, "api/": 1}`, "malformed_request",
			[]string{"/versions/api~1Orders malformed_request", "/versions/api~1 malformed_request"}},
		{"a singleton key other than default", `{"branding/x": 1}`, "malformed_request", []string{"/versions/branding~1x malformed_request"}},
		{"too many slashes", `{"api/orders/x": 1}`, "malformed_request", []string{"/versions/api~1orders~1x malformed_request"}},
		{"zero", `{"api/orders": 0}`, "malformed_request", []string{"/versions/api~1orders malformed_request"}},
		{"negative", `{"api/orders": -2}`, "malformed_request", []string{"/versions/api~1orders malformed_request"}},
		{"a fraction", `{"api/orders": 1.5}`, "malformed_request", []string{"/versions/api~1orders malformed_request"}},
		{"an exponent", `{"api/orders": 1e0}`, "malformed_request", []string{"/versions/api~1orders malformed_request"}},
		{"a string", `{"api/orders": "1"}`, "malformed_request", []string{"/versions/api~1orders malformed_request"}},
		{"null", `{"api/orders": null}`, "malformed_request", []string{"/versions/api~1orders malformed_request"}},
		{"too large", `{"api/orders": 99999999999}`, "malformed_request", []string{"/versions/api~1orders malformed_request"}},
		{"repeated", `{"api/orders": 1, "api/orders": 1}`, "malformed_request", []string{"/versions/api~1orders malformed_request"}},
		{"not an object", `["api/orders"]`, "malformed_request", []string{"/versions malformed_request"}},
		{"a pointer character escaped", `{"api~x": 1}`, "malformed_request", []string{"/versions/api~0x malformed_request"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := postPlan(e, "", `{"config": `+cfg+`, "versions": `+tt.versions+`}`)
			expectErrors(t, expectProblem(t, r, http.StatusBadRequest, tt.code), tt.errors...)
		})
	}
	// With an unknown member and a malformed document too: every 400
	// problem at once.
	r := postPlan(e, "", `{"config": {"apis": []}, "versions": {"orders": 1}, "extra": 1}`)
	expectErrors(t, expectProblem(t, r, http.StatusBadRequest, "malformed_request"),
		"/config/apis malformed_request", "/versions/orders malformed_request", "/extra unknown_field")
	expectNoPlanStored(t, e)
}

// TestPlanVersionsOrder checks where the 409 of moved versions sits in the
// order of plan creation's answers: after 403 (listing a type needs its read
// permission) and 422 validation_failed, before 422 policy_conflict.
func TestPlanVersionsOrder(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(docOf(t, validDoc), false)
	e.Apply(p["id"].(string), map[string]any{})
	stale := exportedPlanBody(e)["versions"]
	changeOrders(t, e, "Orders v2")

	apiDoc := func(name, lifetime string) map[string]any {
		return docOf(t, `{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "`+name+`",
		  "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": `+lifetime+`}}}`)
	}
	// 403: a key that reads apis but not connections, whose versions are listed.
	_, apisOnly := keyWithPerms(t, e, "config:write", "apis:read")
	r := postPlan(e, apisOnly, map[string]any{"config": apiDoc("Orders v3", "3600"), "versions": stale})
	prob := expectProblem(t, r, http.StatusForbidden, "insufficient_permissions")
	want := []string{"apis:read", "applications:read", "attack-protection:read", "branding:read", "config:write", "connections:read",
		"environment-settings:read", "identity-settings:read"}
	if diff := cmp.Diff(want, prob.RequiredPermissions); diff != "" {
		t.Errorf("required_permissions (-want +got):\n%s", diff)
	}
	// 422 validation_failed comes first.
	r = postPlan(e, "", map[string]any{"config": apiDoc("Orders v3", "10"), "versions": stale})
	expectErrors(t, expectProblem(t, r, http.StatusUnprocessableEntity, "validation_failed"),
		"/config/apis/orders/token_lifetime_seconds out_of_range")
	// Then the 409, before a policy conflict.
	setPolicies(t, e, `{"min_password_length": 12}`)
	r = postPlan(e, "", map[string]any{"config": docOf(t, `{"connections": {"db": {"type": "database", "display_name": "Main",
	  "active": true, "database": {"requires_username": true}}}}`), "versions": stale})
	expectErrors(t, expectProblem(t, r, http.StatusConflict, "config_conflict"), "/versions/api~1orders version_changed")
	// Listing the current versions, the policy conflict answers.
	r = postPlan(e, "", map[string]any{"config": docOf(t, `{"connections": {"db": {"type": "database", "display_name": "Main",
	  "active": true, "database": {"requires_username": true}}}}`), "versions": exportedPlanBody(e)["versions"]})
	expectProblem(t, r, http.StatusUnprocessableEntity, "policy_conflict")
}
