package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/keenauth/configplans/test/apitest"
)

// jsonString is s as a JSON string literal.
func jsonString(t testing.TB, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// displayNameDocs holds, per kind with a display_name, a document whose
// one resource has the display name %s, and the pointer of that name.
var displayNameDocs = []struct {
	kind, doc, pointer string
}{
	{"environment_settings", `{"environment_settings": {"display_name": %s, "default_locale": "en", "session_lifetime_hours": 72}}`,
		"/config/environment_settings/display_name"},
	{"connection", `{"connections": {"main-db": {"type": "database", "display_name": %s, "active": true,
		"database": {"requires_username": false}}}}`, "/config/connections/main-db/display_name"},
	{"api", `{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": %s, "token_lifetime_seconds": 60}}}`,
		"/config/apis/orders/display_name"},
	{"role", `{"roles": {"admin": {"display_name": %s}}}`, "/config/roles/admin/display_name"},
	{"application", `{"applications": {"portal": {"display_name": %s, "type": "spa"}}}`, "/config/applications/portal/display_name"},
}

func TestDisplayNameWithAnInvisibleOrControlCharacterIs422(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	names := map[string]string{
		"a zero-width space":       "Main\u200b",
		"a byte order mark":        "\ufeffMain",
		"a right-to-left override": "Ma\u202ein",
		"a newline":                "Main\n",
		"a tab":                    "Ma\tin",
		"a C1 control":             "Main\u0085",
	}
	for _, d := range displayNameDocs {
		for what, name := range names {
			t.Run(d.kind+" with "+what, func(t *testing.T) {
				r := postPlan(e, "", map[string]any{"config": docOf(t, fmt.Sprintf(d.doc, jsonString(t, name)))})
				expectErrors(t, expectProblem(t, r, http.StatusUnprocessableEntity, "validation_failed"), d.pointer+" invalid")
			})
		}
		t.Run(d.kind+" with visible accents and scripts", func(t *testing.T) {
			r := postPlan(e, "", map[string]any{"config": docOf(t, fmt.Sprintf(d.doc, jsonString(t, "Cafe\u0301 東京")))})
			if r.Status != http.StatusCreated {
				t.Fatalf("create plan: %d %s", r.Status, r.Body)
			}
		})
	}
	expectNoInvalidPlanStored(t, e)
}

// expectNoInvalidPlanStored checks that only the accepted plans were stored:
// one per kind of displayNameDocs.
func expectNoInvalidPlanStored(t *testing.T, e *apitest.Env) {
	t.Helper()
	if plans, _ := storedPlanRows(t, e); plans != int64(len(displayNameDocs)) {
		t.Errorf("%d plans stored, want %d (the valid ones)", plans, len(displayNameDocs))
	}
}
