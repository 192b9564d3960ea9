package api_test

import (
	"net/http"
	"slices"
	"strings"
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

// internalProblem fails t unless r is the problem status/code with exactly
// the pointers want, in any order.
func internalProblem(t *testing.T, name string, r *apitest.Response, status int, code string, want ...string) {
	t.Helper()
	if r.Status != status || r.Code() != code {
		t.Errorf("%s: %d %s, want %d %s", name, r.Status, r.Body, status, code)
		return
	}
	got := []string{}
	errs, _ := r.JSON()["errors"].([]any)
	for _, fe := range errs {
		got = append(got, fe.(map[string]any)["pointer"].(string))
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: pointers %q, want %q: %s", name, got, want, r.Body)
	}
}

// internalStrictCase is a body an internal endpoint must refuse as a public
// one would: the status, code and pointers of the answer.
type internalStrictCase struct {
	name   string
	body   string
	status int
	code   string
	ptrs   []string
}

// TestTokenActivityBodyParsedStrictly: the report is a closed object whose
// members are matched exactly, once each, with nothing after it, and whose
// values have their types, answered with the pointers of the public
// endpoints; nothing is stored.
func TestTokenActivityBodyParsedStrictly(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	at := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	members := `"environment_id": "` + e.EnvID + `", "application_key": "portal", "issued_at": "` + at + `"`
	valid := "{" + members + "}"
	for _, tc := range []internalStrictCase{
		{"unknown member", "{" + members + `, "x": 1}`, 400, "unknown_field", []string{"/x"}},
		{"case variant of a member", `{"Environment_ID": "` + e.EnvID + `", "application_key": "portal", "issued_at": "` + at + `"}`,
			400, "unknown_field", []string{"/Environment_ID"}},
		{"every case variant", `{"ENVIRONMENT_ID": "` + e.EnvID + `", "Application_Key": "portal", "Issued_At": "` + at + `"}`,
			400, "unknown_field", []string{"/ENVIRONMENT_ID", "/Application_Key", "/Issued_At"}},
		{"repeated member", "{" + members + `, "environment_id": "` + e.EnvID + `"}`, 400, "malformed_request", []string{"/environment_id"}},
		{"repeated member with another value", "{" + members + `, "application_key": "other"}`, 400, "malformed_request", []string{"/application_key"}},
		{"a second value after the object", valid + ` {}`, 400, "malformed_request", nil},
		{"text after the object", valid + `x`, 400, "malformed_request", nil},
		{"a second object", valid + valid, 400, "malformed_request", nil},
		{"not an object", `[` + valid + `]`, 400, "malformed_request", nil},
		{"empty body", ``, 400, "malformed_request", nil},
		{"truncated", valid[:len(valid)-1], 400, "malformed_request", nil},
		{"wrong types", `{"environment_id": 1, "application_key": ["portal"], "issued_at": true}`,
			400, "malformed_request", []string{"/environment_id", "/application_key", "/issued_at"}},
		{"null", `{"environment_id": null, "application_key": "portal", "issued_at": "` + at + `"}`, 400, "malformed_request", []string{"/environment_id"}},
		{"not a time", `{"environment_id": "` + e.EnvID + `", "application_key": "portal", "issued_at": "yesterday"}`,
			400, "malformed_request", []string{"/issued_at"}},
		{"a time as a number", `{"environment_id": "` + e.EnvID + `", "application_key": "portal", "issued_at": 1700000000}`,
			400, "malformed_request", []string{"/issued_at"}},
		{"unknown and wrong type at once", `{"environment_id": 1, "application_key": "portal", "issued_at": "` + at + `", "x": 1}`,
			400, "malformed_request", []string{"/environment_id", "/x"}},
	} {
		internalProblem(t, tc.name, internalDo(e, "POST", "/internal/v1/token-activity", tc.body), tc.status, tc.code, tc.ptrs...)
	}
	var n int64
	e.GormDB().Raw("SELECT count(*) FROM token_activity WHERE environment_id = ?", e.EnvID).Scan(&n)
	if n != 0 {
		t.Fatalf("refused reports stored %d rows", n)
	}
	if r := internalDo(e, "POST", "/internal/v1/token-activity", valid); r.Status != http.StatusNoContent {
		t.Fatalf("the valid report: %d %s", r.Status, r.Body)
	}
}

// TestPoliciesBodyParsedStrictly: the policies are parsed as strictly as a
// public body, with the same pointers, and a refused body changes nothing.
func TestPoliciesBodyParsedStrictly(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	path := "/internal/v1/environments/" + e.EnvID + "/policies"
	valid := `{"mfa_required": true, "allowed_callback_hosts": ["portal.shop.example"]}`
	if r := internalDo(e, "PUT", path, valid); r.Status != http.StatusOK {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	before := internalDo(e, "PUT", path, valid).Body
	for _, tc := range []internalStrictCase{
		{"unknown member", `{"mfa_required": true, "mfa": true}`, 400, "unknown_field", []string{"/mfa"}},
		{"case variant of a member", `{"MFA_Required": false}`, 400, "unknown_field", []string{"/MFA_Required"}},
		{"repeated member", `{"mfa_required": true, "mfa_required": false}`, 400, "malformed_request", []string{"/mfa_required"}},
		{"a second value after the object", valid + ` {}`, 400, "malformed_request", nil},
		{"text after the object", valid + `]`, 400, "malformed_request", nil},
		{"not an object", `"mfa_required"`, 400, "malformed_request", nil},
		{"empty body", ``, 400, "malformed_request", nil},
		{"wrong types", `{"mfa_required": "yes", "allowed_callback_hosts": ["a.example", 2], "min_password_length": 12.5}`,
			400, "malformed_request", []string{"/mfa_required", "/allowed_callback_hosts/1", "/min_password_length"}},
		{"an array member that is not an array", `{"allowed_callback_hosts": "a.example"}`, 400, "malformed_request", []string{"/allowed_callback_hosts"}},
		{"unknown and wrong type at once", `{"mfa_required": 1, "x": 1}`, 400, "malformed_request", []string{"/mfa_required", "/x"}},
	} {
		internalProblem(t, tc.name, internalDo(e, "PUT", path, tc.body), tc.status, tc.code, tc.ptrs...)
	}
	if after := internalDo(e, "GET", path, nil); after.Status == http.StatusOK && string(after.Body) != string(before) {
		t.Errorf("refused bodies changed the policies: %s", after.Body)
	}
	var stored string
	e.GormDB().Raw("SELECT CAST(policies AS TEXT) FROM environment_policies WHERE environment_id = ?", e.EnvID).Scan(&stored)
	if !strings.Contains(stored, "portal.shop.example") || !strings.Contains(strings.ReplaceAll(stored, " ", ""), `"mfa_required":true`) {
		t.Errorf("refused bodies changed the stored policies: %s", stored)
	}
}

// TestInternalBodiesAnswerAsPublicOnes: the same faults in the body of a
// plan creation and of the internal endpoints get the same code and the
// same pointers.
func TestInternalBodiesAnswerAsPublicOnes(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	at := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	report := `"environment_id": "` + e.EnvID + `", "application_key": "portal", "issued_at": "` + at + `"`
	plan := `"config": {"apis": {}}`
	policies := `"mfa_required": true`
	for _, f := range []struct {
		name string
		body func(members, first string) string
	}{
		{"unknown member", func(m, _ string) string { return "{" + m + `, "zz": 1}` }},
		{"case variant", func(m, first string) string { return "{" + m + `, "` + strings.ToUpper(first) + `": 1}` }},
		{"repeated member", func(m, first string) string { return "{" + m + `, "` + first + `": 1}` }},
		{"data after the object", func(m, _ string) string { return "{" + m + "} 1" }},
		{"not an object", func(m, _ string) string { return "[{" + m + "}]" }},
	} {
		public := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: f.body(plan, "config")})
		for _, in := range []struct {
			method, path, members, first string
		}{
			{"POST", "/internal/v1/token-activity", report, "environment_id"},
			{"PUT", "/internal/v1/environments/" + e.EnvID + "/policies", policies, "mfa_required"},
		} {
			r := internalDo(e, in.method, in.path, f.body(in.members, in.first))
			want := internalPointers(public)
			for i, p := range want {
				want[i] = strings.NewReplacer("/config", "/"+in.first, "/CONFIG", "/"+strings.ToUpper(in.first)).Replace(p)
			}
			internalProblem(t, f.name+" "+in.path, r, public.Status, public.Code(), want...)
		}
	}
}

// internalPointers returns the pointers of a problem's errors.
func internalPointers(r *apitest.Response) []string {
	out := []string{}
	errs, _ := r.JSON()["errors"].([]any)
	for _, fe := range errs {
		out = append(out, fe.(map[string]any)["pointer"].(string))
	}
	return out
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
