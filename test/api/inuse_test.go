package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/keenauth/configplans/test/apitest"
)

// TestPlanRefusesDeletingAConnectionInUse deletes a connection that an
// application still uses, by null and by prune: 422 validation_failed,
// in_use, at the deletion or at /prune, the detail naming the connection
// and its user; nothing is stored. Deleting or changing the user in the
// same plan lets it through.
func TestPlanRefusesDeletingAConnectionInUse(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(docOf(t, validDoc), false)
	e.Apply(p["id"].(string), map[string]any{})
	before, _ := storedPlanRows(t, e)

	portal := func(connections string) string {
		return `{"display_name": "Portal", "type": "regular_web", "callback_urls": ["https://portal.shop.example/callback"],
		  "connections": ` + connections + `, "api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}`
	}
	refused := []struct {
		name   string
		body   map[string]any
		errors []string
	}{
		{"a null", map[string]any{"config": docOf(t, `{"connections": {"db": null}}`)},
			[]string{"/config/connections/db in_use"}},
		{"a prune", map[string]any{"config": docOf(t, `{"connections": {}}`), "prune": true},
			[]string{"/prune in_use"}},
		{"a null with the user in the document, still using it",
			map[string]any{"config": docOf(t, `{"connections": {"db": null}, "applications": {"portal": `+portal(`["db"]`)+`}}`)},
			[]string{"/config/connections/db in_use", "/config/applications/portal/connections/0 dangling_reference"}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			r := postPlan(e, "", tt.body)
			prob := expectProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")
			expectErrors(t, prob, tt.errors...)
			for _, fe := range prob.Errors {
				if fe.Code == "in_use" && (!strings.Contains(fe.Detail, "connection/db") || !strings.Contains(fe.Detail, "application/portal")) {
					t.Errorf("detail %q does not name the connection and its user", fe.Detail)
				}
			}
		})
	}
	if after, _ := storedPlanRows(t, e); after != before {
		t.Errorf("a refused plan was stored: %d plans, then %d", before, after)
	}

	for name, doc := range map[string]string{
		"with its user deleted": `{"connections": {"db": null}, "applications": {"portal": null}}`,
		"with its user changed": `{"connections": {"db": null}, "applications": {"portal": ` + portal(`[]`) + `}}`,
	} {
		if r := postPlan(e, "", map[string]any{"config": docOf(t, doc)}); r.Status != http.StatusCreated {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
}
