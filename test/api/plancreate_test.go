package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// storedPlanRows counts the plans and plan events of the harness's
// environment in the database.
func storedPlanRows(t *testing.T, e *apitest.Env) (planRows, eventRows int64) {
	t.Helper()
	db := e.DB.DB
	if err := db.Raw("SELECT count(*) FROM config_plans WHERE environment_id = ?", e.EnvID).Scan(&planRows).Error; err != nil {
		t.Fatalf("count plans: %v", err)
	}
	if err := db.Raw("SELECT count(*) FROM plan_events WHERE environment_id = ?", e.EnvID).Scan(&eventRows).Error; err != nil {
		t.Fatalf("count plan events: %v", err)
	}
	return planRows, eventRows
}

// expectNoPlanStored checks that the environment has no plan: neither in
// the database nor in GET /v1/config-plans.
func expectNoPlanStored(t *testing.T, e *apitest.Env) {
	t.Helper()
	if p, ev := storedPlanRows(t, e); p != 0 || ev != 0 {
		t.Errorf("stored %d plans and %d plan events, want none", p, ev)
	}
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans"})
	if r.Status != http.StatusOK {
		t.Fatalf("list plans: %d %s", r.Status, r.Body)
	}
	if data := r.JSON()["data"].([]any); len(data) != 0 {
		t.Errorf("GET /v1/config-plans lists %d plans, want none", len(data))
	}
}

// postPlan posts a plan request and returns the answer, whatever it is.
func postPlan(e *apitest.Env, secret string, body any) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: body, Secret: secret})
}

// docOf decodes a JSON literal of a test.
func docOf(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("test JSON %s: %v", s, err)
	}
	return m
}

// validDoc is a valid document of four types; planning it needs
// config:write and the read permissions of those types.
const validDoc = `{
  "environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 72},
  "connections": {"db": {"type": "database", "display_name": "Main", "active": true, "database": {"requires_username": false}}},
  "apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
                      "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600}},
  "applications": {"portal": {"display_name": "Portal", "type": "regular_web",
                   "callback_urls": ["https://portal.shop.example/callback"], "connections": ["db"],
                   "api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}}
}`

var validDocPermissions = []string{"apis:read", "applications:read", "config:write", "connections:read", "environment-settings:read"}

// bigAPIDocument is a document of one api with n scopes of about 330 bytes
// each: its plan holds the spec twice (spec and diff).
func bigAPIDocument(n int) map[string]any {
	scopes := make([]any, n)
	desc := strings.Repeat("d", 256)
	for i := range scopes {
		scopes[i] = map[string]any{"value": fmt.Sprintf("scope:%060d", i), "description": desc}
	}
	return map[string]any{"apis": map[string]any{"big": map[string]any{
		"identifier": "https://api.shop.example/big", "display_name": "Big", "token_lifetime_seconds": 3600, "scopes": scopes}}}
}

func encodeJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// padBody pads a JSON body with trailing whitespace to exactly n bytes.
func padBody(body []byte, n int) []byte {
	return append(body, bytes.Repeat([]byte(" "), n-len(body))...)
}

// setPolicies sets the environment's policies through the internal API.
func setPolicies(t *testing.T, e *apitest.Env, policies string) {
	t.Helper()
	r := e.Do(apitest.Request{Method: "PUT", Path: "/internal/v1/environments/" + e.EnvID + "/policies", Body: policies,
		Secret: "-", Header: map[string]string{"Authorization": "Bearer " + apitest.InternalToken}})
	if r.Status != http.StatusOK {
		t.Fatalf("put policies: %d %s", r.Status, r.Body)
	}
}

// TestPlanCreationRefusals sends every refused plan creation of SPEC §5,
// including requests that are wrong in two ways (the first answer in the
// contract's order wins), and checks that none stored anything.
func TestPlanCreationRefusals(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	setPolicies(t, e, `{"forbid_social_connections": true, "require_https_callbacks": true}`)

	all := config.AllPermissions()
	without := func(perm string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(p string) bool { return p == perm })
	}
	_, noConfigWrite := keyWithPerms(t, e, without(config.PermConfigWrite)...)
	_, noAppRead := keyWithPerms(t, e, without("applications:read")...)
	_, writesOnly := keyWithPerms(t, e, "config:write", "apis:write", "applications:write", "connections:write",
		"environment-settings:write", "branding:write")
	_, nothing := keyWithPerms(t, e)
	revokedID, revoked := keyWithPerms(t, e, all...)
	if err := e.Domain.Keys.RevokeKey(context.Background(), revokedID); err != nil {
		t.Fatal(err)
	}

	valid := docOf(t, validDoc)
	withDoc := func(edit func(doc map[string]any)) map[string]any {
		doc := docOf(t, validDoc)
		edit(doc)
		return map[string]any{"config": doc}
	}
	social := func(doc map[string]any) {
		doc["connections"].(map[string]any)["github"] = map[string]any{"type": "social", "display_name": "GitHub", "active": true,
			"social": map[string]any{"provider": "github", "use_own_credentials": false}}
	}
	invalidLifetime := func(doc map[string]any) {
		doc["environment_settings"].(map[string]any)["session_lifetime_hours"] = 0
	}
	bigDoc := encodeJSON(t, map[string]any{"config": bigAPIDocument(19000)})
	if len(bigDoc) < 6<<20 || len(bigDoc) > 7<<20 {
		t.Fatalf("the large document has %d bytes, want 6–7 MiB", len(bigDoc))
	}
	bigWithSocial := bigAPIDocument(19000)
	bigWithSocial["connections"] = map[string]any{"github": map[string]any{"type": "social", "display_name": "GitHub",
		"active": true, "social": map[string]any{"provider": "github", "use_own_credentials": false}}}
	tooLong := padBody(encodeJSON(t, map[string]any{"config": valid}), 12<<20+1)

	tests := []struct {
		name     string
		secret   string
		header   map[string]string
		body     any
		status   int
		code     string
		errors   []string
		required []string
	}{
		// 401 comes first, whatever the body.
		{name: "no key", secret: "-", body: map[string]any{"config": valid}, status: 401, code: "unauthenticated"},
		{name: "no key and a malformed body", secret: "-", body: `{"config":`, status: 401, code: "unauthenticated"},
		{name: "no key and a body over 12 MiB", secret: "-", body: tooLong, status: 401, code: "unauthenticated"},
		{name: "revoked key and an invalid body", secret: revoked, body: `{"config": {}}`, status: 401, code: "unauthenticated"},
		{name: "not a Bearer key", secret: "-", header: map[string]string{"Authorization": "Basic a3NrXzE6eA=="},
			body: map[string]any{"config": valid}, status: 401, code: "unauthenticated"},

		// 400 malformed_request.
		{name: "not JSON", body: `{"config":`, status: 400, code: "malformed_request"},
		{name: "empty body", body: "", status: 400, code: "malformed_request"},
		{name: "an array", body: `[{"config": {}}]`, status: 400, code: "malformed_request"},
		{name: "data after the object", body: `{"config": {"branding": {"primary_color": "#000000"}}} {}`, status: 400, code: "malformed_request"},
		{name: "a closing brace after the object", body: `{"config": {"branding": {"primary_color": "#000000"}}}}`, status: 400, code: "malformed_request"},
		{name: "a closing bracket after the object", body: `{"config": {"branding": {"primary_color": "#000000"}}}]`, status: 400, code: "malformed_request"},
		{name: "repeated request members", body: `{"config": {"branding": {"primary_color": "#000000"}}, "prune": true, "config": {"roles": {}}, "prune": false}`,
			status: 400, code: "malformed_request", errors: []string{"/config malformed_request", "/prune malformed_request"}},
		{name: "config not an object", body: `{"config": ["connections"]}`, status: 400, code: "malformed_request",
			errors: []string{"/config malformed_request"}},
		{name: "document key of the wrong type", body: `{"config": {"connections": [], "apis": "x"}}`, status: 400, code: "malformed_request",
			errors: []string{"/config/connections malformed_request", "/config/apis malformed_request"}},
		{name: "spec member of the wrong type",
			body:   `{"config": {"environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": "72"}}}`,
			status: 400, code: "malformed_request", errors: []string{"/config/environment_settings/session_lifetime_hours malformed_request"}},
		{name: "null where a spec member cannot be null",
			body:   `{"config": {"apis": {"orders": {"identifier": "urn:orders", "display_name": null, "token_lifetime_seconds": 60}}}}`,
			status: 400, code: "malformed_request", errors: []string{"/config/apis/orders/display_name malformed_request"}},
		{name: "a fraction where an integer is due",
			body:   `{"config": {"apis": {"orders": {"identifier": "urn:orders", "display_name": "O", "token_lifetime_seconds": 60.5}}}}`,
			status: 400, code: "malformed_request", errors: []string{"/config/apis/orders/token_lifetime_seconds malformed_request"}},
		{name: "repeated member", body: `{"config": {"branding": {"primary_color": "#000000", "primary_color": "#111111"}}}`,
			status: 400, code: "malformed_request", errors: []string{"/config/branding/primary_color malformed_request"}},
		{name: "prune not a boolean", body: `{"config": {"branding": {"primary_color": "#000000"}}, "prune": "yes"}`,
			status: 400, code: "malformed_request", errors: []string{"/prune malformed_request"}},
		{name: "malformed and unknown members: malformed wins and both are listed",
			body:   `{"config": {"branding": {"primary_color": 1, "shade": "dark"}}}`,
			status: 400, code: "malformed_request", errors: []string{"/config/branding/primary_color malformed_request", "/config/branding/shade unknown_field"}},

		// 400 unknown_field, with RFC 6901 pointers.
		{name: "unknown request member", body: map[string]any{"config": valid, "dry_run": true}, status: 400, code: "unknown_field",
			errors: []string{"/dry_run unknown_field"}},
		{name: "unknown request member needing escapes", body: map[string]any{"config": valid, "a/b~c": 1}, status: 400, code: "unknown_field",
			errors: []string{"/a~1b~0c unknown_field"}},
		{name: "unknown document key", body: `{"config": {"widgets": {}, "x/y": {}, "branding": {"primary_color": "#000000"}}}`,
			status: 400, code: "unknown_field", errors: []string{"/config/widgets unknown_field", "/config/x~1y unknown_field"}},
		{name: "unknown member deep inside a spec", body: withDoc(func(doc map[string]any) {
			doc["connections"].(map[string]any)["sso"] = map[string]any{"type": "enterprise", "display_name": "SSO", "active": false,
				"oidc": map[string]any{"issuer": "https://idp.example", "client_id": "c", "scopes": []any{"openid"}, "client_secret": "s"}}
		}), status: 400, code: "unknown_field", errors: []string{"/config/connections/sso/oidc/client_secret unknown_field"}},
		{name: "unknown members in list items and in several specs", body: withDoc(func(doc map[string]any) {
			api := doc["apis"].(map[string]any)["orders"].(map[string]any)
			api["scopes"] = []any{map[string]any{"value": "a"}, map[string]any{"value": "b", "extra": 1}}
			doc["environment_settings"].(map[string]any)["timezone"] = "UTC"
		}), status: 400, code: "unknown_field",
			errors: []string{"/config/apis/orders/scopes/1/extra unknown_field", "/config/environment_settings/timezone unknown_field"}},
		{name: "unknown member under a key needing escapes",
			body:   `{"config": {"connections": {"a/b~c": {"type": "database", "display_name": "X", "active": true, "database": {"requires_username": true}, "x~y/z": 1}}}}`,
			status: 400, code: "unknown_field", errors: []string{"/config/connections/a~1b~0c/x~0y~1z unknown_field"}},
		{name: "unknown members of the request and of the document are all reported",
			body:   `{"config": {"widgets": {}, "branding": {"primary_color": "#000000", "shade": 1}}, "extra": 1}`,
			status: 400, code: "unknown_field", errors: []string{"/extra unknown_field", "/config/widgets unknown_field", "/config/branding/shade unknown_field"}},
		{name: "prune not a boolean and an unknown document key are both reported",
			body:   `{"config": {"widgets": {}}, "prune": 1}`,
			status: 400, code: "malformed_request", errors: []string{"/prune malformed_request", "/config/widgets unknown_field"}},
		{name: "unknown member without permissions: 400 before 403", secret: nothing,
			body: map[string]any{"config": valid, "extra": 1}, status: 400, code: "unknown_field", errors: []string{"/extra unknown_field"}},
		{name: "malformed without permissions: 400 before 403", secret: nothing, body: `{"config": {"apis": 1}}`,
			status: 400, code: "malformed_request", errors: []string{"/config/apis malformed_request"}},

		// 403 lists every permission the request needs.
		{name: "no config:write", secret: noConfigWrite, body: map[string]any{"config": valid}, status: 403, code: "insufficient_permissions",
			required: validDocPermissions},
		{name: "no read permission of one planned type", secret: noAppRead, body: map[string]any{"config": valid}, status: 403,
			code: "insufficient_permissions", required: validDocPermissions},
		{name: "write permissions without the read ones", secret: writesOnly, body: map[string]any{"config": valid}, status: 403,
			code: "insufficient_permissions", required: validDocPermissions},
		{name: "two types sharing a read permission", secret: nothing,
			body:   `{"config": {"branding": {"primary_color": "#000000"}, "application_branding": {}}}`,
			status: 403, code: "insufficient_permissions", required: []string{"branding:read", "config:write"}},
		{name: "no permission and an invalid document: 403 before 422", secret: noAppRead, body: withDoc(invalidLifetime),
			status: 403, code: "insufficient_permissions", required: validDocPermissions},
		{name: "no permission and no config: 403 before 422", secret: nothing, body: `{"prune": true}`,
			status: 403, code: "insufficient_permissions", required: []string{"config:write"}},

		// 422 validation_failed reports every problem.
		{name: "several problems in one request", body: `{"config": {
			"environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 0},
			"connections": {
				"sso": {"type": "enterprise", "display_name": "SSO", "active": false,
				        "oidc": {"issuer": "http://idp.example", "client_id": "c", "scopes": ["email"]}},
				"Bad_Key": {"type": "database", "display_name": "Bad", "active": true, "database": {"requires_username": true}}},
			"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders", "token_lifetime_seconds": 10}},
			"applications": {"portal": {"type": "web", "callback_urls": ["ftp://portal.example/cb"]}}}}`,
			status: 422, code: "validation_failed", errors: []string{
				"/config/environment_settings/session_lifetime_hours out_of_range",
				"/config/connections/sso/oidc/issuer invalid",
				"/config/connections/sso/oidc/scopes must_include_openid",
				"/config/connections/Bad_Key invalid",
				"/config/apis/orders/token_lifetime_seconds out_of_range",
				"/config/applications/portal/display_name required",
				"/config/applications/portal/type not_allowed",
				"/config/applications/portal/callback_urls/0 invalid",
			}},
		{name: "dangling references", body: withDoc(func(doc map[string]any) {
			doc["applications"].(map[string]any)["portal"].(map[string]any)["connections"] = []any{"db", "ghost"}
			doc["roles"] = map[string]any{"admin": map[string]any{"display_name": "Admin",
				"permissions": []any{map[string]any{"api": "nowhere", "scope": "read"}}}}
			doc["application_branding"] = map[string]any{"kiosk": map[string]any{"primary_color": "#000000"}}
		}), status: 422, code: "validation_failed", errors: []string{
			"/config/applications/portal/connections/1 dangling_reference",
			"/config/roles/admin/permissions/0/api dangling_reference",
			"/config/application_branding/kiosk dangling_reference",
		}},
		{name: "a grant of a missing API, once", body: withDoc(func(doc map[string]any) {
			doc["applications"].(map[string]any)["portal"].(map[string]any)["api_grants"] = []any{
				map[string]any{"api": "ghost", "scopes": []any{"a", "b", "c"}}}
			doc["roles"] = map[string]any{"admin": map[string]any{"display_name": "Admin",
				"permissions": []any{map[string]any{"api": "orders", "scope": "delete:everything"}}}}
		}), status: 422, code: "validation_failed", errors: []string{
			"/config/applications/portal/api_grants/0/api dangling_reference",
			"/config/roles/admin/permissions/0/scope unknown_scope",
		}},
		{name: "a scope the API lacks", body: withDoc(func(doc map[string]any) {
			doc["applications"].(map[string]any)["portal"].(map[string]any)["api_grants"] = []any{
				map[string]any{"api": "orders", "scopes": []any{"read:orders", "write:orders"}}}
		}), status: 422, code: "validation_failed", errors: []string{"/config/applications/portal/api_grants/0/scopes/1 unknown_scope"}},
		{name: "a singleton mapped to null", body: `{"config": {"branding": null, "identity_settings": null}}`, status: 422, code: "validation_failed",
			errors: []string{"/config/branding not_deletable", "/config/identity_settings not_deletable"}},
		{name: "config empty", body: `{"config": {}}`, status: 422, code: "validation_failed", errors: []string{"/config empty"}},
		{name: "config empty with prune", body: `{"config": {}, "prune": true}`, status: 422, code: "validation_failed", errors: []string{"/config empty"}},
		{name: "config missing", body: `{}`, status: 422, code: "validation_failed", errors: []string{"/config required"}},
		{name: "config null", body: `{"config": null, "prune": false}`, status: 422, code: "validation_failed", errors: []string{"/config required"}},
		{name: "unique values repeated inside the document", body: withDoc(func(doc map[string]any) {
			doc["connections"].(map[string]any)["spare"] = map[string]any{"type": "database", "display_name": "Main", "active": false,
				"database": map[string]any{"requires_username": true}}
			doc["apis"].(map[string]any)["orders2"] = map[string]any{"identifier": "https://api.shop.example/orders", "display_name": "Orders 2",
				"token_lifetime_seconds": 60}
			doc["roles"] = map[string]any{"a": map[string]any{"display_name": "Ops"}, "b": map[string]any{"display_name": "Ops"}}
		}), status: 422, code: "validation_failed", errors: []string{
			"/config/connections/spare/display_name duplicate",
			"/config/apis/orders2/identifier duplicate",
			"/config/roles/b/display_name duplicate",
		}},
		{name: "a new enterprise connection without OIDC material", body: withDoc(func(doc map[string]any) {
			doc["connections"].(map[string]any)["sso"] = map[string]any{"type": "enterprise", "display_name": "SSO", "active": false, "oidc": nil}
		}), status: 422, code: "validation_failed", errors: []string{"/config/connections/sso/oidc required"}},
		{name: "invalid and against a policy: validation_failed before policy_conflict", body: withDoc(func(doc map[string]any) {
			social(doc)
			invalidLifetime(doc)
		}), status: 422, code: "validation_failed", errors: []string{"/config/environment_settings/session_lifetime_hours out_of_range"}},

		// 422 policy_conflict.
		{name: "an active social connection is forbidden", body: withDoc(social), status: 422, code: "policy_conflict",
			errors: []string{"/config/connections/github/active forbid_social_connections"}},
		{name: "every policy violation is reported", body: withDoc(func(doc map[string]any) {
			social(doc)
			doc["applications"].(map[string]any)["portal"].(map[string]any)["callback_urls"] = []any{
				"https://portal.shop.example/callback", "http://localhost:3000/callback"}
		}), status: 422, code: "policy_conflict", errors: []string{
			"/config/connections/github/active forbid_social_connections",
			"/config/applications/portal/callback_urls/1 require_https_callbacks",
		}},
		{name: "a large plan against a policy: policy_conflict before 413", body: map[string]any{"config": bigWithSocial},
			status: 422, code: "policy_conflict", errors: []string{"/config/connections/github/active forbid_social_connections"}},

		// 413.
		{name: "a plan over 10 MiB from a request under 12 MiB", body: bigDoc, status: 413, code: "config_document_too_large"},
		{name: "a document over 10 MiB whose plan is small", body: `{"config": {"branding": {"primary_color": "#635bff"}` +
			strings.Repeat(" ", 10<<20) + `}}`, status: 413, code: "config_document_too_large"},
		{name: "a request over 12 MiB", body: tooLong, status: 413, code: "request_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: tt.body, Secret: tt.secret, Header: tt.header})
			p := expectProblem(t, r, tt.status, tt.code)
			expectErrors(t, p, tt.errors...)
			if diff := cmp.Diff(tt.required, p.RequiredPermissions); diff != "" {
				t.Errorf("required_permissions (-want +got):\n%s", diff)
			}
			expectNoPlanStored(t, e)
		})
	}
}

func TestPlanRequestOfExactly12MiBIsAccepted(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	body := padBody([]byte(`{"config": {"branding": {"primary_color": "#635bff"}}}`), 12<<20)
	r := postPlan(e, "", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("a 12 MiB request: %d %s", r.Status, r.Body)
	}
	if n, _ := storedPlanRows(t, e); n != 1 {
		t.Errorf("stored %d plans, want 1", n)
	}
}

// planTimestamp is the format of the contract's timestamps.
var planTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func parseTimestamp(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	if !planTimestamp.MatchString(s) {
		t.Fatalf("timestamp %v is not RFC 3339 UTC with milliseconds", v)
	}
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// The normalised specs of the §4 example.
const (
	legacySpec = `{"active":true,"database":{"requires_username":false},"display_name":"Legacy","type":"database"}`
	ordersSpec = `{"display_name":"Orders","identifier":"https://api.shop.example/orders",
		"scopes":[{"description":"Read orders","value":"read:orders"}],"token_lifetime_seconds":3600}`
	acmeSpec = `{"active":false,"display_name":"ACME","oidc":{"client_id":"abc","issuer":"https://idp.acme.example",
		"scopes":["openid","email"]},"type":"enterprise"}`
	githubSpec = `{"active":true,"display_name":"GitHub","social":{"provider":"github","use_own_credentials":false},"type":"social"}`
	portalSpec = `{"api_grants":[{"api":"orders","scopes":["read:orders"]}],"callback_urls":["https://portal.shop.example/callback"],
		"connections":["acme-sso"],"display_name":"Portal","type":"regular_web"}`
)

// TestPlanOfExampleDocument plans the §4 document against an environment
// holding the connection it deletes, and checks the whole plan.
func TestPlanOfExampleDocument(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	first := e.Plan(map[string]any{"connections": map[string]any{"legacy": docOf(t, legacySpec)}}, false)
	applied := e.Apply(first["id"].(string), nil)
	legacyID, _ := applied["changes"].([]any)[0].(map[string]any)["resource_id"].(string)
	if !config.ValidID(config.PrefixConnection, legacyID) {
		t.Fatalf("the applied plan's connection has resource_id %v, want a con_ id", applied["changes"])
	}

	keyID, secret := keyWithPerms(t, e, config.AllPermissions()...)
	r := postPlan(e, secret, map[string]any{"config": apitest.ExampleDocument(), "prune": false})
	if r.Status != http.StatusCreated {
		t.Fatalf("create plan: %d %s", r.Status, r.Body)
	}
	got := r.JSON()
	id, _ := got["id"].(string)
	if !config.ValidID(config.PrefixPlan, id) {
		t.Errorf("id = %q", id)
	}
	if loc := r.Header.Get("Location"); loc != "/v1/config-plans/"+id {
		t.Errorf("Location = %q", loc)
	}
	created, expires := parseTimestamp(t, got["created_at"]), parseTimestamp(t, got["expires_at"])
	if expires.Sub(created) != 24*time.Hour {
		t.Errorf("expires_at - created_at = %s, want 24h", expires.Sub(created))
	}
	if d := time.Since(created); d < -time.Minute || d > time.Minute {
		t.Errorf("created_at %s is not now", created)
	}
	for _, w := range got["warnings"].([]any) {
		w := w.(map[string]any)
		if w["detail"] == "" || w["detail"] == nil {
			t.Errorf("warning %v has no detail", w)
		}
		w["detail"] = "…"
	}
	got["id"], got["created_at"], got["expires_at"] = "cfgp_…", "…", "…"

	want := docOf(t, `{
	  "id": "cfgp_…", "object": "config_plan", "environment_id": "`+e.EnvID+`", "status": "planned", "prune": false,
	  "types": ["api", "application", "connection", "environment_settings"], "referencing_types": [],
	  "changes": [
	    {"kind": "connection", "key": "legacy", "action": "delete", "base_version": 1, "spec": null,
	     "diff": [{"op": "remove", "path": "", "old": `+legacySpec+`}], "requires_secret": false, "resource_id": "`+legacyID+`"},
	    {"kind": "api", "key": "orders", "action": "create", "base_version": null, "spec": `+ordersSpec+`,
	     "diff": [{"op": "add", "path": "", "value": `+ordersSpec+`}], "requires_secret": false},
	    {"kind": "connection", "key": "acme-sso", "action": "create", "base_version": null, "spec": `+acmeSpec+`,
	     "diff": [{"op": "add", "path": "", "value": `+acmeSpec+`}], "requires_secret": true,
	     "secret_ref": "KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET", "resource_id": null},
	    {"kind": "connection", "key": "github", "action": "create", "base_version": null, "spec": `+githubSpec+`,
	     "diff": [{"op": "add", "path": "", "value": `+githubSpec+`}], "requires_secret": false, "resource_id": null},
	    {"kind": "application", "key": "portal", "action": "create", "base_version": null, "spec": `+portalSpec+`,
	     "diff": [{"op": "add", "path": "", "value": `+portalSpec+`}], "requires_secret": false},
	    {"kind": "environment_settings", "key": "default", "action": "update", "base_version": 1,
	     "spec": {"default_locale": "en", "display_name": "Shop", "session_lifetime_hours": 72},
	     "diff": [{"op": "replace", "path": "/session_lifetime_hours", "old": 168, "value": 72}], "requires_secret": false}
	  ],
	  "warnings": [{"code": "deletion_requires_confirmation", "target": "connection/legacy", "pointer": "/changes/0", "detail": "…"}],
	  "required_secrets": ["KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET"],
	  "requires_sp_host": true,
	  "summary": {"create": 4, "update": 1, "delete": 1, "no_op": 0},
	  "created_at": "…", "expires_at": "…", "applied_at": null, "revision_id": null, "created_by": "`+keyID+`",
	  "created_by_owner": null, "approvals": [], "approvals_required": 0, "rejection": null,
	  "rebased_from": null, "moved": []
	}`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}

	// The stored plan is the one answered.
	g := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id})
	if g.Status != http.StatusOK {
		t.Fatalf("get plan: %d %s", g.Status, g.Body)
	}
	if diff := cmp.Diff(docOf(t, string(r.Body)), g.JSON()); diff != "" {
		t.Errorf("GET differs from the creation answer (-created +got):\n%s", diff)
	}
}

func TestPlanWarnsOfUniqueValueInUse(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	base := e.Plan(docOf(t, `{
	  "connections": {"main-db": {"type": "database", "display_name": "Main", "active": true, "database": {"requires_username": false}}},
	  "apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders", "token_lifetime_seconds": 60}},
	  "roles": {"admin": {"display_name": "Admin"}}
	}`), false)
	e.Apply(base["id"].(string), nil)

	type warning struct{ target, pointer, holder string }
	tests := []struct {
		name string
		doc  string
		want []warning
	}{
		{"a connection display_name", `{"connections": {"new-db": {"type": "database", "display_name": "Main", "active": true,
			"database": {"requires_username": true}}}}`,
			[]warning{{"connection/new-db", "/changes/0/spec/display_name", "connection/main-db"}}},
		{"a role display_name", `{"roles": {"root": {"display_name": "Admin"}}}`,
			[]warning{{"role/root", "/changes/0/spec/display_name", "role/admin"}}},
		{"an api identifier", `{"apis": {"orders-v2": {"identifier": "https://api.shop.example/orders", "display_name": "Orders 2",
			"token_lifetime_seconds": 60}}}`,
			[]warning{{"api/orders-v2", "/changes/0/spec/identifier", "api/orders"}}},
		{"a value the document frees in the same plan", `{"connections": {
			"main-db": {"type": "database", "display_name": "Old main", "active": true, "database": {"requires_username": false}},
			"new-db": {"type": "database", "display_name": "Main", "active": true, "database": {"requires_username": true}}}}`, nil},
		{"a value whose holder the plan deletes", `{"roles": {"admin": null, "root": {"display_name": "Admin"}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := postPlan(e, "", map[string]any{"config": docOf(t, tt.doc)})
			if r.Status != http.StatusCreated {
				t.Fatalf("create plan: %d %s", r.Status, r.Body)
			}
			var p plans.Plan
			r.Decode(t, &p)
			var got []warning
			for _, w := range p.Warnings {
				if w.Code != "unique_value_in_use" {
					continue
				}
				got = append(got, warning{w.Target, w.Pointer, ""})
				if !strings.Contains(w.Detail, tt.want[len(got)-1].holder) {
					t.Errorf("detail %q does not name the holder %s", w.Detail, tt.want[len(got)-1].holder)
				}
			}
			want := slices.Clone(tt.want)
			for i := range want {
				want[i].holder = ""
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(warning{})); diff != "" {
				t.Errorf("unique_value_in_use warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanWarnsOfApplicationDeletionOnlyAfterARecentToken(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	app := `{"display_name": "%s", "type": "spa"}`
	base := e.Plan(docOf(t, fmt.Sprintf(`{"applications": {"busy": `+app+`, "idle": `+app+`, "stale": `+app+`}}`, "Busy", "Idle", "Stale")), false)
	e.Apply(base["id"].(string), nil)
	now := e.Clock.Now()
	for key, at := range map[string]time.Time{"busy": now.Add(-29 * 24 * time.Hour), "stale": now.Add(-31 * 24 * time.Hour)} {
		r := e.Do(apitest.Request{Method: "POST", Path: "/internal/v1/token-activity", Secret: "-",
			Header: map[string]string{"Authorization": "Bearer " + apitest.InternalToken},
			Body:   map[string]any{"environment_id": e.EnvID, "application_key": key, "issued_at": at.Format(time.RFC3339Nano)}})
		if r.Status != http.StatusNoContent {
			t.Fatalf("token activity: %d %s", r.Status, r.Body)
		}
	}

	p := e.Plan(docOf(t, `{"applications": {"busy": null, "idle": null, "stale": null}}`), false)
	var got []string
	for _, c := range p["changes"].([]any) {
		c := c.(map[string]any)
		got = append(got, fmt.Sprintf("%s/%s %s", c["kind"], c["key"], c["action"]))
		if _, has := c["resource_id"]; has {
			t.Errorf("an application change carries resource_id: %v", c)
		}
	}
	if diff := cmp.Diff([]string{"application/busy delete", "application/idle delete", "application/stale delete"}, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	var warnings []string
	for _, w := range p["warnings"].([]any) {
		w := w.(map[string]any)
		warnings = append(warnings, fmt.Sprintf("%s %s %s", w["code"], w["target"], w["pointer"]))
	}
	if diff := cmp.Diff([]string{"deletion_requires_confirmation application/busy /changes/0"}, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// changeLines renders a plan's changes as "kind/key action" lines.
func changeLines(p map[string]any) []string {
	var out []string
	for _, c := range p["changes"].([]any) {
		c := c.(map[string]any)
		out = append(out, fmt.Sprintf("%s/%s %s", c["kind"], c["key"], c["action"]))
	}
	return out
}

func stringList(v any) []string {
	out := []string{}
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func TestPruneDeletesWhatTheDocumentLeavesOutOfPlannedTypesOnly(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	const (
		orders  = `{"identifier": "https://api.shop.example/orders", "display_name": "Orders", "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 60}`
		billing = `{"identifier": "https://api.shop.example/billing", "display_name": "Billing", "token_lifetime_seconds": 60}`
		db1     = `{"type": "database", "display_name": "One", "active": true, "database": {"requires_username": false}}`
		db2     = `{"type": "database", "display_name": "Two", "active": true, "database": {"requires_username": false}}`
	)
	base := e.Plan(docOf(t, `{
	  "apis": {"orders": `+orders+`, "billing": `+billing+`},
	  "connections": {"db1": `+db1+`, "db2": `+db2+`},
	  "roles": {"reader": {"display_name": "Reader", "permissions": [{"api": "orders", "scope": "read:orders"}]}},
	  "applications": {"portal": {"display_name": "Portal", "type": "spa", "connections": ["db1"],
	                   "api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}}
	}`), false)
	e.Apply(base["id"].(string), nil)

	tests := []struct {
		name        string
		doc         string
		prune       bool
		changes     []string
		types       []string
		referencing []string
		warnings    []string
	}{
		{"prune deletes the apis left out", `{"apis": {"orders": ` + orders + `}}`, true,
			[]string{"api/billing delete", "api/orders no_op"}, []string{"api"}, []string{"application", "role"}, nil},
		{"without prune nothing is deleted", `{"apis": {"orders": ` + orders + `}}`, false,
			[]string{"api/orders no_op"}, []string{"api"}, []string{}, nil},
		{"prune of connections and a singleton", `{"connections": {"db1": ` + db1 + `}, "branding": {"primary_color": "#000000"}}`, true,
			[]string{"connection/db2 delete", "connection/db1 no_op", "branding/default update"},
			[]string{"branding", "connection"}, []string{"application"},
			[]string{"deletion_requires_confirmation connection/db2 /changes/0"}},
		{"prune of an empty type deletes all of it", `{"roles": {}}`, true,
			[]string{"role/reader delete"}, []string{"role"}, []string{}, nil},
		{"prune of a type that references others lists no referencing type", `{"applications": {}, "roles": {}}`, true,
			[]string{"application/portal delete", "role/reader delete"}, []string{"application", "role"}, []string{"application_branding"}, nil},
		{"prune of singletons only deletes nothing", `{"environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 168}}`, true,
			[]string{"environment_settings/default no_op"}, []string{"environment_settings"}, []string{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := e.Plan(docOf(t, tt.doc), tt.prune)
			if diff := cmp.Diff(tt.changes, changeLines(p)); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.types, stringList(p["types"])); diff != "" {
				t.Errorf("types (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.referencing, stringList(p["referencing_types"])); diff != "" {
				t.Errorf("referencing_types (-want +got):\n%s", diff)
			}
			var warnings []string
			for _, w := range p["warnings"].([]any) {
				w := w.(map[string]any)
				warnings = append(warnings, fmt.Sprintf("%s %s %s", w["code"], w["target"], w["pointer"]))
			}
			if diff := cmp.Diff(tt.warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if p["prune"] != tt.prune {
				t.Errorf("prune = %v", p["prune"])
			}
		})
	}

	// Pruning an api that a role and an application still reference would
	// leave dangling references: refused, nothing stored.
	before, _ := storedPlanRows(t, e)
	r := postPlan(e, "", map[string]any{"config": docOf(t, `{"apis": {"billing": `+billing+`}}`), "prune": true})
	expectErrors(t, expectProblem(t, r, http.StatusUnprocessableEntity, "validation_failed"), "/prune in_use")
	if after, _ := storedPlanRows(t, e); after != before {
		t.Errorf("a refused plan was stored: %d plans, then %d", before, after)
	}
}

func TestNoOpDocumentMakesAPlannedPlan(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(docOf(t, `{
	  "environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 168},
	  "identity_settings": {"allowed_identifiers": ["email"], "password_policy": {"min_length": 8, "require_digits": false,
	                        "require_symbols": false}, "mfa": "optional"},
	  "attack_protection": {"brute_force": {"enabled": true, "max_attempts": 10}, "breached_password_detection": {"enabled": false},
	                        "bot_detection": "off"},
	  "branding": {"primary_color": "#635BFF"},
	  "connections": {"ghost": null}
	}`), false)
	if p["status"] != "planned" {
		t.Errorf("status = %v", p["status"])
	}
	if diff := cmp.Diff(map[string]any{"create": 0.0, "update": 0.0, "delete": 0.0, "no_op": 5.0}, p["summary"]); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	for _, c := range p["changes"].([]any) {
		c := c.(map[string]any)
		if c["action"] != "no_op" || len(c["diff"].([]any)) != 0 {
			t.Errorf("change %v is not a no_op with an empty diff", c)
		}
		if c["key"] == "ghost" {
			if c["spec"] != nil || c["base_version"] != nil || c["resource_id"] != nil {
				t.Errorf("deleting a missing connection: %v", c)
			}
			if _, has := c["resource_id"]; !has {
				t.Errorf("a connection change without resource_id: %v", c)
			}
		} else if c["base_version"] != 1.0 {
			t.Errorf("singleton %v: base_version = %v, want 1", c["kind"], c["base_version"])
		}
	}
	if len(p["warnings"].([]any)) != 0 || len(p["required_secrets"].([]any)) != 0 || p["requires_sp_host"] != false {
		t.Errorf("a no-op plan with warnings, secrets or host: %v %v %v", p["warnings"], p["required_secrets"], p["requires_sp_host"])
	}
}
