package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/keenauth/configplans/test/apitest"
)

// internalDo sends a request to an internal endpoint with the internal token.
func internalDo(e *apitest.Env, method, path string, body any) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: method, Path: path, Body: body, Secret: apitest.InternalToken})
}

// TestTokenActivityKeepsTheLatestTimeAndRefusesBadReports: 204 for a report,
// the latest time kept (an older report does not move it back), and every
// bad report refused with nothing stored.
func TestTokenActivityKeepsTheLatestTimeAndRefusesBadReports(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	latest := func() time.Time {
		var ts time.Time
		e.GormDB().Raw("SELECT last_issued_at FROM token_activity WHERE environment_id = ? AND application_key = 'portal'", e.EnvID).Scan(&ts)
		return ts.UTC()
	}
	now := time.Now().UTC().Truncate(time.Second)
	report := func(at string) map[string]any {
		return map[string]any{"environment_id": e.EnvID, "application_key": "portal", "issued_at": at}
	}
	if r := internalDo(e, "POST", "/internal/v1/token-activity", report(now.Format(time.RFC3339))); r.Status != http.StatusNoContent {
		t.Fatalf("report: %d %s", r.Status, r.Body)
	}
	if r := internalDo(e, "POST", "/internal/v1/token-activity", report(now.Add(-time.Hour).Format(time.RFC3339))); r.Status != http.StatusNoContent {
		t.Fatalf("older report: %d %s", r.Status, r.Body)
	}
	if got := latest(); !got.Equal(now) {
		t.Errorf("last_issued_at = %v, want %v (an older report must not move it back)", got, now)
	}

	cases := []struct {
		name   string
		secret string
		body   any
		status int
		code   string
		ptrs   []string
	}{
		{"no token", "-", report(now.Format(time.RFC3339)), 401, "unauthenticated", nil},
		{"an API key is not the internal token", "", report(now.Format(time.RFC3339)), 401, "unauthenticated", nil},
		{"in the future", apitest.InternalToken, report(now.Add(time.Hour).Format(time.RFC3339)), 422, "validation_failed", []string{"/issued_at"}},
		{"every field wrong", apitest.InternalToken, map[string]any{"environment_id": "nope", "application_key": "Bad Key"}, 422, "validation_failed",
			[]string{"/application_key", "/environment_id", "/issued_at"}},
		{"unknown environment", apitest.InternalToken, map[string]any{"environment_id": "env_01hzzzzzzzzzzzzzzzzzzzzzzz", "application_key": "portal",
			"issued_at": now.Format(time.RFC3339)}, 404, "not_found", nil},
		{"unknown field", apitest.InternalToken, map[string]any{"environment_id": e.EnvID, "application_key": "portal", "issued_at": now.Format(time.RFC3339), "x": 1},
			400, "unknown_field", nil},
		{"not a time", apitest.InternalToken, report("yesterday"), 400, "malformed_request", nil},
	}
	for _, tc := range cases {
		r := e.Do(apitest.Request{Method: "POST", Path: "/internal/v1/token-activity", Body: tc.body, Secret: tc.secret})
		if r.Status != tc.status || r.Code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Body, tc.status, tc.code)
			continue
		}
		var got []string
		for _, fe := range r.JSON()["errors"].([]any) {
			got = append(got, fe.(map[string]any)["pointer"].(string))
		}
		if len(tc.ptrs) > 0 && !equalStrings(got, tc.ptrs) {
			t.Errorf("%s: pointers %v, want %v", tc.name, got, tc.ptrs)
		}
	}
	if got := latest(); !got.Equal(now) {
		t.Errorf("a refused report moved last_issued_at to %v", got)
	}
}

// TestPoliciesPutReplacesTheSetAndRefusesBadInput: 200 with the policies,
// a PUT replaces the whole set, and bad input changes nothing.
func TestPoliciesPutReplacesTheSetAndRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	path := "/internal/v1/environments/" + e.EnvID + "/policies"
	r := internalDo(e, "PUT", path, map[string]any{"mfa_required": true, "allowed_callback_hosts": []any{"*.Shop.example"}})
	if r.Status != http.StatusOK || r.JSON()["mfa_required"] != true {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	r = internalDo(e, "PUT", path, map[string]any{"require_https_callbacks": true})
	if r.Status != http.StatusOK || r.JSON()["mfa_required"] != false || r.JSON()["require_https_callbacks"] != true {
		t.Fatalf("a second put does not replace the set: %d %s", r.Status, r.Body)
	}
	stored := func() string {
		var v string
		e.GormDB().Raw("SELECT CAST(policies AS TEXT) FROM environment_policies WHERE environment_id = ?", e.EnvID).Scan(&v)
		return v
	}
	before := stored()
	for _, tc := range []struct {
		name   string
		secret string
		path   string
		body   any
		status int
		code   string
	}{
		{"no token", "-", path, map[string]any{}, 401, "unauthenticated"},
		{"unknown environment", apitest.InternalToken, "/internal/v1/environments/env_01hzzzzzzzzzzzzzzzzzzzzzzz/policies", map[string]any{}, 404, "not_found"},
		{"malformed environment id", apitest.InternalToken, "/internal/v1/environments/nope/policies", map[string]any{}, 404, "not_found"},
		{"unknown field", apitest.InternalToken, path, map[string]any{"mfa": true}, 400, "unknown_field"},
		{"wrong type", apitest.InternalToken, path, map[string]any{"mfa_required": "yes"}, 400, "malformed_request"},
		{"invalid value", apitest.InternalToken, path, map[string]any{"min_password_length": 3}, 422, "validation_failed"},
	} {
		r := e.Do(apitest.Request{Method: "PUT", Path: tc.path, Body: tc.body, Secret: tc.secret})
		if r.Status != tc.status || r.Code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Body, tc.status, tc.code)
		}
	}
	if after := stored(); after != before {
		t.Errorf("refused requests changed the policies:\n%s\n%s", before, after)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
