package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/keenauth/configplans/test/apitest"
)

// TestHostileBodiesAreRefusedNeverAnInternalError sends bodies built to
// break parsers — deep nesting, huge numbers, invalid UTF-8, NUL bytes,
// long keys, wrong types at every level — to every endpoint that reads a
// body: each is answered 4xx with a problem (apitest fails any 5xx), and
// no plan is stored.
func TestHostileBodiesAreRefusedNeverAnInternalError(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	planID := e.Plan(map[string]any{"environment_settings": map[string]any{"display_name": "Shop", "default_locale": "en",
		"session_lifetime_hours": 72}}, false)["id"].(string)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	deepObj := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	bodies := []string{
		deep, deepObj,
		`{"config": ` + deep + `}`,
		`{"config": {"connections": {"x": ` + deepObj + `}}}`,
		`{"config": {"environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 1e400}}}`,
		`{"config": {"environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": -9223372036854775809}}}`,
		"{\"config\": {\"environment_settings\": {\"display_name\": \"\xff\xfe\", \"default_locale\": \"en\", \"session_lifetime_hours\": 1}}}",
		"{\"config\": {\"apis\": {\"a\\u0000b\": null}}}",
		"{\"config\": {\"environment_settings\": {\"display_name\": \"Sh\\u0000op\", \"default_locale\": \"en\", \"session_lifetime_hours\": 1}}}",
		`{"config": {"apis": {"` + strings.Repeat("k", 100000) + `": null}}}`,
		`{"config": {"roles": {"r": {"display_name": "R", "permissions": [[], {}, null, 1, "x"]}}}}`,
		`{"config": {"applications": {"a": {"display_name": "A", "type": "spa", "callback_urls": [` + strings.Repeat(`"javascript:alert(1)",`, 200) + `"x"]}}}}`,
		`{"resolved_secrets": {"` + strings.Repeat("K", 70000) + `": "v"}, "confirm_deletions": ` + deep + `}`,
		`{"sp_host": "` + strings.Repeat("a.", 5000) + `com"}`,
		"\ufeff{}", "{\"config\": {}}\x00", `{"config": {}} {"config": {}}`, `"string"`, `12`, `true`,
	}
	paths := []string{"/v1/config-plans", "/v1/config-plans/" + planID + ":apply", "/v1/config-plans/" + planID + ":apply?validate_only=true"}
	for _, path := range paths {
		for i, body := range bodies {
			r := e.Do(apitest.Request{Method: "POST", Path: path, Body: body})
			if r.Status < 400 || r.Status >= 500 {
				t.Errorf("POST %s body #%d: %d %.200s", path, i, r.Status, r.Body)
			}
		}
	}
	var n int64
	e.GormDB().Table("config_plans").Count(&n)
	if n != 1 {
		t.Errorf("%d plans stored, want only the one made by the test", n)
	}
	// An escaped backslash before u0000 is six ordinary characters.
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans",
		Body: `{"config": {"environment_settings": {"display_name": "Sh\\u0000op", "default_locale": "en", "session_lifetime_hours": 1}}}`})
	if r.Status != http.StatusCreated {
		t.Errorf("a display name with the text \\u0000: %d %s", r.Status, r.Body)
	}
	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + planID}); r.Status != http.StatusOK || r.JSON()["status"] != "planned" {
		t.Errorf("the plan after the hostile applies: %d %s", r.Status, r.Body)
	}
}
