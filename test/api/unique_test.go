package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config/displayname"
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

func TestDisplayNamesThatDifferByCaseOrFormAreDuplicatesInADocument(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	conn := func(name string) string {
		return `{"type": "database", "display_name": ` + jsonString(t, name) + `, "active": true, "database": {"requires_username": false}}`
	}
	api := func(id string) string {
		return `{"identifier": "` + id + `", "display_name": "A", "token_lifetime_seconds": 60}`
	}
	tests := []struct {
		name, doc string
		want      []string // nil: the plan is created
	}{
		{"connections Main, MAIN, main", `{"connections": {"a": ` + conn("Main") + `, "b": ` + conn("MAIN") + `, "c": ` + conn("main") + `}}`,
			[]string{"/config/connections/b/display_name duplicate", "/config/connections/c/display_name duplicate"}},
		{"roles with é precomposed and decomposed", `{"roles": {"a": {"display_name": "Caf\u00e9"}, "b": {"display_name": "CAFE\u0301"}}}`,
			[]string{"/config/roles/b/display_name duplicate"}},
		{"api identifiers that differ by case", `{"apis": {"p": ` + api("https://api.shop.example/Orders") + `, "q": ` +
			api("https://api.shop.example/orders") + `}}`, nil},
		{"api identifiers that are the same", `{"apis": {"p": ` + api("https://api.shop.example/orders") + `, "q": ` +
			api("https://api.shop.example/orders") + `}}`, []string{"/config/apis/q/identifier duplicate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := postPlan(e, "", map[string]any{"config": docOf(t, tt.doc)})
			if tt.want == nil {
				if r.Status != http.StatusCreated {
					t.Fatalf("create plan: %d %s", r.Status, r.Body)
				}
				return
			}
			expectErrors(t, expectProblem(t, r, http.StatusUnprocessableEntity, "validation_failed"), tt.want...)
		})
	}
}

// uniqueWarnings lists the unique_value_in_use warnings of a plan as
// "target pointer".
func uniqueWarnings(p map[string]any) []string {
	out := []string{}
	for _, w := range p["warnings"].([]any) {
		w := w.(map[string]any)
		if w["code"] == "unique_value_in_use" {
			out = append(out, fmt.Sprint(w["target"], " ", w["pointer"]))
		}
	}
	return out
}

func TestDisplayNameInUseUnderAnotherCaseOrFormWarnsAndApplyIs409(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	base := e.Plan(docOf(t, `{
	  "connections": {"main-db": {"type": "database", "display_name": "Main", "active": true, "database": {"requires_username": false}}},
	  "apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders", "token_lifetime_seconds": 60}},
	  "roles": {"cafe": {"display_name": "Caf\u00e9"}}
	}`), false)
	e.Apply(base["id"].(string), nil)

	conn := func(key, name string) string {
		return `{"connections": {"` + key + `": {"type": "database", "display_name": ` + jsonString(t, name) +
			`, "active": true, "database": {"requires_username": true}}}}`
	}
	// The refusals first: they leave the configuration as it is.
	tests := []struct {
		name, doc, target, pointer string
	}{
		{"a connection MAIN", conn("new-db", "MAIN"), "connection/new-db", "/changes/0/spec/display_name"},
		{"a connection main", conn("new-db", "main"), "connection/new-db", "/changes/0/spec/display_name"},
		{"a role with é decomposed", `{"roles": {"bar": {"display_name": "Cafe\u0301"}}}`, "role/bar", "/changes/0/spec/display_name"},
		{"a role with É decomposed", `{"roles": {"bar": {"display_name": "CAFE\u0301"}}}`, "role/bar", "/changes/0/spec/display_name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := e.Plan(docOf(t, tt.doc), false)
			if diff := cmp.Diff([]string{tt.target + " " + tt.pointer}, uniqueWarnings(p)); diff != "" {
				t.Errorf("unique_value_in_use warnings (-want +got):\n%s", diff)
			}
			r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + p["id"].(string) + ":apply"})
			assertProblem(t, r, http.StatusConflict, "conflict", []fieldProblem{{tt.pointer, "duplicate"}})
			if g := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + p["id"].(string)}); g.JSON()["status"] != "planned" {
				t.Errorf("status after the 409 = %v, want planned", g.JSON()["status"])
			}
		})
	}

	t.Run("an api identifier that differs by case only", func(t *testing.T) {
		p := e.Plan(docOf(t, `{"apis": {"orders-v2": {"identifier": "https://api.shop.example/Orders", "display_name": "Orders 2",
			"token_lifetime_seconds": 60}}}`), false)
		if w := uniqueWarnings(p); len(w) != 0 {
			t.Errorf("unique_value_in_use warnings = %v, want none", w)
		}
		e.Apply(p["id"].(string), nil)
	})
	t.Run("a connection renamed to its own name in another case", func(t *testing.T) {
		p := e.Plan(docOf(t, conn("main-db", "MAIN")), false)
		if w := uniqueWarnings(p); len(w) != 0 {
			t.Errorf("unique_value_in_use warnings = %v, want none", w)
		}
		e.Apply(p["id"].(string), nil)
	})
	t.Run("a name freed by a rename in the same plan", func(t *testing.T) {
		p := e.Plan(docOf(t, `{"connections": {
		  "main-db": {"type": "database", "display_name": "Old main", "active": true, "database": {"requires_username": true}},
		  "new-db": {"type": "database", "display_name": "main", "active": true, "database": {"requires_username": true}}}}`), false)
		if w := uniqueWarnings(p); len(w) != 0 {
			t.Errorf("unique_value_in_use warnings = %v, want none", w)
		}
		e.Apply(p["id"].(string), nil)
	})
}

// storedDisplayNameKey reads the display_name_key of a resource.
func storedDisplayNameKey(t *testing.T, e *apitest.Env, kind, key string) *string {
	t.Helper()
	var got []struct{ DisplayNameKey *string }
	err := e.GormDB().Raw("SELECT display_name_key FROM resources WHERE environment_id = ? AND kind = ? AND key = ?", e.EnvID, kind, key).
		Scan(&got).Error
	if err != nil || len(got) != 1 {
		t.Fatalf("read display_name_key of %s/%s: %v (%d rows)", kind, key, err, len(got))
	}
	return got[0].DisplayNameKey
}

func TestDisplayNameKeyIsWrittenAndARowWithoutItStillCollides(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	e.Apply(e.Plan(docOf(t, `{
	  "connections": {"main-db": {"type": "database", "display_name": "Main", "active": true, "database": {"requires_username": false}}},
	  "apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders", "token_lifetime_seconds": 60}},
	  "roles": {"admin": {"display_name": "Stra\u00dfe"}}
	}`), false)["id"].(string), nil)
	key := func(s string) *string { k := displayname.Key(s); return &k }
	if diff := cmp.Diff(key("Main"), storedDisplayNameKey(t, e, "connection", "main-db")); diff != "" {
		t.Errorf("connection key after create (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(key("STRASSE"), storedDisplayNameKey(t, e, "role", "admin")); diff != "" {
		t.Errorf("role key after create (-want +got):\n%s", diff)
	}
	if got := storedDisplayNameKey(t, e, "api", "orders"); got != nil {
		t.Errorf("api key = %q, want NULL: an api's display name need not be unique", *got)
	}
	e.Apply(e.Plan(docOf(t, `{"roles": {"admin": {"display_name": "Admins"}}}`), false)["id"].(string), nil)
	if diff := cmp.Diff(key("admins"), storedDisplayNameKey(t, e, "role", "admin")); diff != "" {
		t.Errorf("role key after update (-want +got):\n%s", diff)
	}

	// A row whose key was not written (by a replica of the release before
	// the key existed) is still a holder of its name.
	if err := e.GormDB().Exec("UPDATE resources SET display_name_key = NULL WHERE environment_id = ? AND kind = 'connection'", e.EnvID).Error; err != nil {
		t.Fatal(err)
	}
	p := e.Plan(docOf(t, `{"connections": {"new-db": {"type": "database", "display_name": "MAIN", "active": true,
		"database": {"requires_username": true}}}}`), false)
	if diff := cmp.Diff([]string{"connection/new-db /changes/0/spec/display_name"}, uniqueWarnings(p)); diff != "" {
		t.Errorf("unique_value_in_use warnings (-want +got):\n%s", diff)
	}
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + p["id"].(string) + ":apply"})
	assertProblem(t, r, http.StatusConflict, "conflict", []fieldProblem{{"/changes/0/spec/display_name", "duplicate"}})
}
