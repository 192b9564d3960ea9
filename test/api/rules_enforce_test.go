package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// ruleWarnings are the warnings of a plan whose code is rule_warning or
// rule_approval.
func ruleWarnings(plan map[string]any) []map[string]any {
	var out []map[string]any
	ws, _ := plan["warnings"].([]any)
	for _, w := range ws {
		m := w.(map[string]any)
		if c := m["code"]; c == "rule_warning" || c == "rule_approval" {
			out = append(out, m)
		}
	}
	return out
}

const ordersLifetime = `{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
	"scopes": [{"value": "read:orders"}], "token_lifetime_seconds": %d},
	"billing": {"identifier": "https://api.shop.example/billing", "display_name": "Billing",
	"scopes": [{"value": "read:billing"}], "token_lifetime_seconds": 3600}}}`

// TestWarnRuleWarnsAtEveryChangeItCatches (§18): a warn rule true for a
// change other than no_op adds {rule_warning, rule, target,
// /changes/<i>, message} to the plan, once per change, at plan creation,
// preview and rebase; a no_op is not evaluated; at apply a warn rule
// changes nothing.
func TestWarnRuleWarnsAtEveryChangeItCatches(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	putRules(t, k.e, nil,
		rule("long-tokens", "change.kind == 'api' && new.token_lifetime_seconds > 3600", "warn", "A token lifetime above an hour."),
		rule("every-change", "true", "warn", "Something changes."))
	plan := k.plan(fmt.Sprintf(ordersLifetime, 7200), false)
	i := changeIndex(plan, "api/orders")
	want := []map[string]any{
		{"code": "rule_warning", "rule": "long-tokens", "target": "api/orders", "pointer": fmt.Sprintf("/changes/%d", i), "detail": "A token lifetime above an hour."},
		{"code": "rule_warning", "rule": "every-change", "target": "api/orders", "pointer": fmt.Sprintf("/changes/%d", i), "detail": "Something changes."},
	}
	// billing is a no_op: no rule sees it, not even "true".
	if diff := cmp.Diff(want, ruleWarnings(plan)); diff != "" {
		t.Errorf("plan creation (-want +got):\n%s", diff)
	}
	prev := postPreview(k.e, "", map[string]any{"config": k.doc(fmt.Sprintf(ordersLifetime, 7200))}, nil)
	if diff := cmp.Diff(want, ruleWarnings(prev.JSON())); prev.Status != 200 || diff != "" {
		t.Errorf("preview: %d (-want +got):\n%s", prev.Status, diff)
	}
	r := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + plan["id"].(string) + ":rebase"})
	if diff := cmp.Diff(want, ruleWarnings(r.JSON())); r.Status != http.StatusCreated || diff != "" {
		t.Errorf("rebase: %d (-want +got):\n%s", r.Status, diff)
	}
	if got := k.get("/v1/config-plans/" + plan["id"].(string)); !cmp.Equal(ruleWarnings(got), want) {
		t.Errorf("GET keeps other warnings: %v", got["warnings"])
	}
	applied := k.mustApply(plan["id"].(string), nil)
	if applied["status"] != "applied" {
		t.Errorf("apply: %v", applied)
	}
}

// TestBlockRuleRefusesPlanCreationAtTheDocument (§18): a block rule that
// catches a change answers 422 policy_conflict with the rule's name as
// code and its message as detail, at /config/<document key>/<key>
// (/config/<document key> for a singleton, /prune for a deletion the prune
// makes), together with §11's policies; preview answers the same, and
// nothing is stored.
func TestBlockRuleRefusesPlanCreationAtTheDocument(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	k.planAndApply(`{"connections": {"prod-db": `+databaseConnection("Production DB")+`}}`, false, nil)
	putRules(t, k.e, map[string]any{"forbid_social_connections": true},
		rule("mfa-stays-required", "change.kind == 'identity_settings' && new.mfa != 'required'", "block", "MFA stays required."),
		rule("no-prod-deletion", "change.kind == 'connection' && change.action == 'delete' && old.display_name.startsWith('Prod')", "block",
			"Production connections are not deleted."))
	before := countRows(t, k.e, "config_plans")
	cases := []struct {
		name  string
		body  map[string]any
		wants []fieldProblem
	}{
		{"a singleton", map[string]any{"config": k.doc(`{"identity_settings": {"allowed_identifiers": ["email"], "mfa": "optional",
			"password_policy": {"min_length": 10, "require_digits": true, "require_symbols": false}}}`)},
			[]fieldProblem{{"/config/identity_settings", "mfa-stays-required"}}},
		{"a deletion in the document, with a policy", map[string]any{"config": k.doc(`{"connections": {"prod-db": null,
			"gh2": {"type": "social", "display_name": "GH2", "active": true, "social": {"provider": "google", "use_own_credentials": false}}}}`)},
			[]fieldProblem{{"/config/connections/prod-db", "no-prod-deletion"}, {"/config/connections/gh2/active", "forbid_social_connections"}}},
		{"a deletion the prune makes", map[string]any{"prune": true, "config": k.doc(`{"connections": {
			"db-main": ` + databaseConnection("Main DB") + `,
			"github": {"type": "social", "display_name": "GitHub", "active": false, "social": {"provider": "github", "use_own_credentials": false}}}}`)},
			[]fieldProblem{{"/prune", "no-prod-deletion"}}},
	}
	for _, c := range cases {
		for _, path := range []string{"/v1/config-plans", previewPath} {
			r := k.e.Do(apitest.Request{Method: "POST", Path: path, Body: c.body})
			t.Run(c.name+" "+path, func(t *testing.T) { assertProblem(t, r, 422, "policy_conflict", c.wants) })
			for _, fe := range problemErrors(r) {
				if fe["code"] == "no-prod-deletion" && fe["detail"] != "Production connections are not deleted." {
					t.Errorf("%s: detail %v, want the rule's message", c.name, fe["detail"])
				}
			}
		}
	}
	if after := countRows(t, k.e, "config_plans"); after != before {
		t.Errorf("refused plans were stored: %d → %d", before, after)
	}
}

// TestRulesInForceAtApplyAndRebaseDecide (§18): a block rule put after
// planning refuses the apply (422 policy_conflict at /changes/<i>, nothing
// written) and the rebase (at /changes/<i> of the source); removed again,
// the plan applies.
func TestRulesInForceAtApplyAndRebaseDecide(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	plan := k.plan(fmt.Sprintf(ordersLifetime, 7200), false)
	id := plan["id"].(string)
	i := changeIndex(plan, "api/orders")
	putRules(t, k.e, nil, rule("short-tokens", "change.kind == 'api' && new.token_lifetime_seconds > 3600", "block", "Tokens live an hour at most."))
	want := []fieldProblem{{fmt.Sprintf("/changes/%d", i), "short-tokens"}}
	before := k.snapshot()
	r := k.apply(id, nil)
	assertProblem(t, r, 422, "policy_conflict", want)
	if errs := problemErrors(r); len(errs) == 1 && errs[0]["detail"] != "Tokens live an hour at most." {
		t.Errorf("detail %v", errs[0]["detail"])
	}
	k.assertUnchanged(before)
	if st := k.planStatus(id); st != "planned" {
		t.Errorf("plan status %s", st)
	}
	assertProblem(t, k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":rebase"}), 422, "policy_conflict", want)
	putRules(t, k.e, nil)
	k.mustApply(id, nil)
}

// TestApprovalRuleRaisesApprovalsRequired (§18, §17): an approval rule
// that catches a change adds {rule_approval, rule, approvals, …} and
// approvals_required is the largest of required_approvals and the caught
// rules' approvals; the apply needs them, as the rules in force then ask.
func TestApprovalRuleRaisesApprovalsRequired(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	_, ana := ownedKey(t, k.e, "ana@shop.example", config.PermConfigRead, config.PermConfigWrite, "apis:read", "apis:write", "roles:read")
	_, bob := ownedKey(t, k.e, "bob@shop.example", config.PermConfigApprove, "apis:read")
	_, eve := ownedKey(t, k.e, "eve@shop.example", config.PermConfigApprove, "apis:read")
	putRules(t, k.e, map[string]any{"required_approvals": 1},
		approvalRule("api-deletion", "change.kind == 'api' && change.action == 'delete'", 2, "Deleting an api needs two approvals."),
		approvalRule("api-change", "change.kind == 'api'", 1, "An api change needs an approval."))
	r := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Secret: ana, Body: map[string]any{"config": map[string]any{"apis": map[string]any{"billing": nil}}}})
	if r.Status != http.StatusCreated {
		t.Fatalf("plan: %d %s", r.Status, r.Body)
	}
	plan := r.JSON()
	id := plan["id"].(string)
	want := []map[string]any{
		{"code": "rule_approval", "rule": "api-deletion", "approvals": float64(2), "target": "api/billing", "pointer": "/changes/0", "detail": "Deleting an api needs two approvals."},
		{"code": "rule_approval", "rule": "api-change", "approvals": float64(1), "target": "api/billing", "pointer": "/changes/0", "detail": "An api change needs an approval."},
	}
	if diff := cmp.Diff(want, ruleWarnings(plan)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if plan["approvals_required"] != float64(2) || k.get("/v1/config-plans/" + id)["approvals_required"] != float64(2) {
		t.Errorf("approvals_required %v, want 2", plan["approvals_required"])
	}
	review(k.e, bob, id, "approve", nil)
	r = k.apply(id, nil)
	if r.Status != 409 || r.Code() != "approval_required" || r.JSON()["approvals_required"] != float64(2) || r.JSON()["approvals_received"] != float64(1) {
		t.Fatalf("one approval of two: %d %s", r.Status, r.Body)
	}
	review(k.e, eve, id, "approve", nil)
	k.mustApply(id, nil)

	// An update: only the one-approval rule, and required_approvals 1.
	upd := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Secret: ana, Body: map[string]any{"config": k.doc(fmt.Sprintf(`{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
	"scopes": [{"value": "read:orders"}], "token_lifetime_seconds": %d}}}`, 600))}}).JSON()
	if upd["approvals_required"] != float64(1) || len(ruleWarnings(upd)) != 1 {
		t.Errorf("update: approvals_required %v, warnings %v", upd["approvals_required"], upd["warnings"])
	}
	// The rules in force at apply: a rule of three approvals put after
	// planning is what the apply needs.
	putRules(t, k.e, nil, approvalRule("three", "change.kind == 'api'", 3, "Three."))
	review(k.e, bob, upd["id"].(string), "approve", nil)
	r = k.apply(upd["id"].(string), nil)
	if r.Status != 409 || r.Code() != "approval_required" || r.JSON()["approvals_required"] != float64(3) {
		t.Fatalf("rule put after planning: %d %s", r.Status, r.Body)
	}
	// Removed, the plan needs what its warnings said at planning (1),
	// which bob gave.
	putRules(t, k.e, nil)
	k.mustApply(upd["id"].(string), nil)

	// A plan told at planning that it needs 2 approvals keeps needing them
	// when the rule is removed before the apply.
	k.mustApply(k.e.Plan(apiDoc("temp", 60), false)["id"].(string), nil)
	putRules(t, k.e, nil, approvalRule("api-deletion", "change.kind == 'api' && change.action == 'delete'", 2, "Two."))
	del := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Secret: ana, Body: map[string]any{"config": map[string]any{"apis": map[string]any{"temp": nil}}}}).JSON()
	if del["approvals_required"] != float64(2) {
		t.Fatalf("deletion plan: %v", del)
	}
	putRules(t, k.e, nil)
	review(k.e, bob, del["id"].(string), "approve", nil)
	r = k.apply(del["id"].(string), nil)
	if r.Status != 409 || r.Code() != "approval_required" || r.JSON()["approvals_required"] != float64(2) {
		t.Fatalf("rule removed after planning: %d %s", r.Status, r.Body)
	}
}

// TestRuleEvaluationErrorsCatchTheChange (§18): a missing member read
// without has(), and an evaluation stopped by the run-time cost limit,
// count as a catch (fail closed), with a detail that says the rule could
// not be evaluated and why.
func TestRuleEvaluationErrorsCatchTheChange(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	var banned []string
	for i := range 100 {
		banned = append(banned, fmt.Sprintf("'banned:%d'", i))
	}
	putRules(t, e, nil,
		rule("typo", "change.kind == 'api' && new.token_lifetime == 60", "warn", "Lifetime of a minute."),
		rule("banned-scopes", "change.kind == 'api' && new.scopes.exists(s, ["+strings.Join(banned, ",")+"].exists(b, s.value == b))", "block",
			"A banned scope."))
	small := apiDoc("orders", 60)
	plan := e.Plan(small, false)
	ws := ruleWarnings(plan)
	if len(ws) != 1 || ws[0]["rule"] != "typo" || !strings.Contains(ws[0]["detail"].(string), "could not be evaluated") ||
		!strings.Contains(ws[0]["detail"].(string), "token_lifetime") {
		t.Errorf("a missing member: %v", plan["warnings"])
	}
	// 5,000 scopes: the estimate (lists at 1,000) let the rule in, the
	// evaluation passes 1,000,000 units and is stopped.
	scopes := make([]any, 5000)
	for i := range scopes {
		scopes[i] = map[string]any{"value": fmt.Sprintf("read:%d", i)}
	}
	big := apiDoc("orders", 60)
	big["apis"].(map[string]any)["orders"].(map[string]any)["scopes"] = scopes
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": big}})
	assertProblem(t, r, 422, "policy_conflict", []fieldProblem{{"/config/apis/orders", "banned-scopes"}})
	if errs := problemErrors(r); len(errs) == 1 && (!strings.Contains(errs[0]["detail"].(string), "could not be evaluated") ||
		!strings.Contains(errs[0]["detail"].(string), "cost limit")) {
		t.Errorf("detail: %v", errs[0]["detail"])
	}
}

// TestRulesSeeTheEnvironment (§18): environment is {id, name}.
func TestRulesSeeTheEnvironment(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	var name string
	e.GormDB().Raw("SELECT name FROM environments WHERE id = ?", e.EnvID).Scan(&name)
	putRules(t, e, nil,
		rule("this-env", fmt.Sprintf("environment.id == %q && environment.name == %q", e.EnvID, name), "warn", "here"),
		rule("other-env", "environment.name == 'elsewhere'", "warn", "there"))
	ws := ruleWarnings(e.Plan(apiDoc("orders", 60), false))
	if len(ws) != 1 || ws[0]["rule"] != "this-env" {
		t.Errorf("warnings %v", ws)
	}
}
