package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/test/apitest"
)

// rule is a guardrail rule as a PUT of the policies sends it.
func rule(name, when, enforcement, message string) map[string]any {
	return map[string]any{"name": name, "when": when, "enforcement": enforcement, "message": message}
}

// approvalRule is an approval rule that needs n approvals.
func approvalRule(name, when string, n int, message string) map[string]any {
	r := rule(name, when, "approval", message)
	r["approvals"] = n
	return r
}

// putRules sets the environment's rules (the other policies at their
// defaults, or as extra says).
func putRules(t *testing.T, e *apitest.Env, extra map[string]any, rules ...map[string]any) {
	t.Helper()
	body := map[string]any{"rules": rules}
	for k, v := range extra {
		body[k] = v
	}
	if r := internalDo(e, "PUT", "/internal/v1/environments/"+e.EnvID+"/policies", body); r.Status != http.StatusOK {
		t.Fatalf("put rules: %d %s", r.Status, r.Body)
	}
}

// TestRulesAreStoredAndAnsweredByConfigPolicies (§18): the rules of a PUT
// are in its answer and in GET /v1/config-policies, approvals null but for
// an approval rule; a PUT without rules leaves none.
func TestRulesAreStoredAndAnsweredByConfigPolicies(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	path := "/internal/v1/environments/" + e.EnvID + "/policies"
	rules := []any{
		rule("mfa-stays-required", "change.kind == 'identity_settings' && new.mfa != 'required'", "block", "MFA stays required."),
		rule("long-tokens", "change.kind == 'api' && new.token_lifetime_seconds > 3600", "warn", "A token lifetime above an hour."),
		approvalRule("api-deletion", "change.kind == 'api' && change.action == 'delete'", 2, "Deleting an api needs two approvals."),
	}
	r := internalDo(e, "PUT", path, map[string]any{"rules": rules})
	if r.Status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	want := []any{}
	for _, x := range rules {
		m := map[string]any{}
		for k, v := range x.(map[string]any) {
			m[k] = v
		}
		if n, ok := m["approvals"].(int); ok {
			m["approvals"] = float64(n)
		} else {
			m["approvals"] = nil
		}
		want = append(want, m)
	}
	if diff := cmp.Diff(want, r.JSON()["rules"]); diff != "" {
		t.Errorf("PUT's answer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.Do(apitest.Request{Method: "GET", Path: "/v1/config-policies"}).JSON()["rules"]); diff != "" {
		t.Errorf("GET /v1/config-policies (-want +got):\n%s", diff)
	}
	internalDo(e, "PUT", path, map[string]any{"mfa_required": true})
	if got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-policies"}).JSON()["rules"]; !cmp.Equal(got, []any{}) {
		t.Errorf("a PUT without rules left %v", got)
	}
}

// TestRuleProblemsAreAnsweredAtTheirPointersAndNothingChanges (§18): more
// than 50 rules at /rules (too_many); every other problem at
// /rules/<i>/<field>, invalid, required when absent, duplicate for a
// repeated name, invalid_expression with CEL's message for a when that
// does not compile or is not bool; and a refused PUT changes nothing.
func TestRuleProblemsAreAnsweredAtTheirPointersAndNothingChanges(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	path := "/internal/v1/environments/" + e.EnvID + "/policies"
	kept := rule("kept", "change.kind == 'role'", "warn", "Roles change.")
	putRules(t, e, map[string]any{"required_approvals": 1}, kept)

	ok := "change.kind == 'api'"
	tooMany := []any{}
	for i := range 51 {
		tooMany = append(tooMany, rule(fmt.Sprintf("r%d", i), ok, "warn", "m"))
	}
	fifty := tooMany[:50]
	cases := []struct {
		name  string
		rules []any
		want  map[string]string // pointer → code
	}{
		{"51 rules", tooMany, map[string]string{"/rules": "too_many"}},
		{"name pattern", []any{rule("Bad_Name", ok, "warn", "m"), rule("-x", ok, "warn", "m"), rule(strings.Repeat("a", 64), ok, "warn", "m")},
			map[string]string{"/rules/0/name": "invalid", "/rules/1/name": "invalid", "/rules/2/name": "invalid"}},
		{"duplicate name", []any{rule("same", ok, "warn", "m"), rule("other", ok, "warn", "m"), rule("same", ok, "block", "m")},
			map[string]string{"/rules/2/name": "duplicate"}},
		{"absent members", []any{map[string]any{}},
			map[string]string{"/rules/0/name": "required", "/rules/0/when": "required", "/rules/0/enforcement": "required", "/rules/0/message": "required"}},
		{"enforcement", []any{rule("a", ok, "deny", "m")}, map[string]string{"/rules/0/enforcement": "invalid"}},
		{"approvals without approval", []any{func() map[string]any { r := rule("a", ok, "block", "m"); r["approvals"] = 2; return r }()},
			map[string]string{"/rules/0/approvals": "invalid"}},
		{"approval without approvals", []any{rule("a", ok, "approval", "m")}, map[string]string{"/rules/0/approvals": "required"}},
		{"approvals out of range", []any{approvalRule("a", ok, 0, "m"), approvalRule("b", ok, 6, "m")},
			map[string]string{"/rules/0/approvals": "invalid", "/rules/1/approvals": "invalid"}},
		{"message length", []any{rule("a", ok, "warn", ""), rule("b", ok, "warn", strings.Repeat("é", 501))},
			map[string]string{"/rules/0/message": "invalid", "/rules/1/message": "invalid"}},
		{"when over 4,096 characters", []any{rule("a", "true || "+strings.Repeat("é", 4096), "warn", "m")}, map[string]string{"/rules/0/when": "invalid"}},
		{"when does not compile", []any{rule("a", "change.kind ==", "warn", "m"), rule("b", "nope == 1", "warn", "m")},
			map[string]string{"/rules/0/when": "invalid_expression", "/rules/1/when": "invalid_expression"}},
		{"when is not bool", []any{rule("a", "change.kind", "warn", "m")}, map[string]string{"/rules/0/when": "invalid_expression"}},
		{"every problem at once", []any{rule("a", "change.kind ==", "warn", "m"), rule("a", ok, "approval", "")},
			map[string]string{"/rules/0/when": "invalid_expression", "/rules/1/name": "duplicate", "/rules/1/approvals": "required", "/rules/1/message": "invalid"}},
	}
	for _, c := range cases {
		r := internalDo(e, "PUT", path, map[string]any{"rules": c.rules, "mfa_required": true})
		got := map[string]string{}
		for _, fe := range problemErrors(r) {
			got[fe["pointer"].(string)] = fe["code"].(string)
		}
		if r.Status != http.StatusUnprocessableEntity || r.Code() != "validation_failed" || !cmp.Equal(got, c.want) {
			t.Errorf("%s: %d %s, want 422 validation_failed %v", c.name, r.Status, r.Body, c.want)
		}
	}
	// CEL's message is in the detail.
	r := internalDo(e, "PUT", path, map[string]any{"rules": []any{rule("a", "change.kind ==", "warn", "m")}})
	if errs := problemErrors(r); len(errs) != 1 || !strings.Contains(errs[0]["detail"].(string), "Syntax error") {
		t.Errorf("the detail does not carry CEL's message: %s", r.Body)
	}
	got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-policies"}).JSON()
	if got["mfa_required"] != false || got["required_approvals"] != float64(1) || len(got["rules"].([]any)) != 1 {
		t.Errorf("refused PUTs changed the policies: %v", got)
	}
	putRules(t, e, nil, func() []map[string]any {
		out := []map[string]any{}
		for _, x := range fifty {
			out = append(out, x.(map[string]any))
		}
		return out
	}()...)
}

// TestRuleWhoseEstimatedCostPassesTheLimitIsRefused (§18): nested
// comprehensions over lists (estimated at 1,000 elements each) pass
// 1,000,000 units: invalid_expression at PUT, with the estimate.
func TestRuleWhoseEstimatedCostPassesTheLimitIsRefused(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	path := "/internal/v1/environments/" + e.EnvID + "/policies"
	for _, when := range []string{
		"new.permissions.exists(p, new.permissions.exists(q, p.scope == q.scope && p.api != q.api))",
		"change.kind == 'api' && new.scopes.all(a, new.scopes.all(b, new.scopes.all(c, a != b || b != c)))",
	} {
		r := internalDo(e, "PUT", path, map[string]any{"rules": []any{rule("costly", when, "block", "m")}})
		errs := problemErrors(r)
		if r.Status != 422 || len(errs) != 1 || errs[0]["pointer"] != "/rules/0/when" || errs[0]["code"] != "invalid_expression" ||
			!strings.Contains(errs[0]["detail"].(string), "estimated cost") {
			t.Errorf("%s: %d %s", when, r.Status, r.Body)
		}
	}
	if got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-policies"}).JSON()["rules"]; !cmp.Equal(got, []any{}) {
		t.Errorf("a refused PUT stored %v", got)
	}
}

// problemErrors is the errors member of a problem.
func problemErrors(r *apitest.Response) []map[string]any {
	var out []map[string]any
	errs, _ := r.JSON()["errors"].([]any)
	for _, x := range errs {
		out = append(out, x.(map[string]any))
	}
	return out
}
