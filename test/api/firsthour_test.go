package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/test/apitest"
)

// warningsOf returns the warnings of a plan with the given code.
func warningsOf(p map[string]any, code string) []map[string]any {
	var out []map[string]any
	for _, w := range p["warnings"].([]any) {
		if w := w.(map[string]any); w["code"] == code {
			out = append(out, w)
		}
	}
	return out
}

// changeIndex is the index of kind/key in a plan's changes (-1: none).
func changeIndex(p map[string]any, ref string) int {
	for i, c := range p["changes"].([]any) {
		c := c.(map[string]any)
		if c["kind"].(string)+"/"+c["key"].(string) == ref {
			return i
		}
	}
	return -1
}

// TestPlanWarnsOfResourcesLeftOutOfItsExport: an export whose config no
// longer holds a resource that its versions still list plans that
// resource as nothing at all, so the plan warns of it (resource_omitted,
// pointer to its versions member), saying how to delete it. A singleton
// left out is warned of too. With prune the left-out resource of a
// planned type is a deletion and is not warned of; mapped to null it is a
// deletion too. A preview warns as the plan does.
func TestPlanWarnsOfResourcesLeftOutOfItsExport(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()

	// The export as it is: nothing left out.
	body := exportedPlanBody(k.e)
	r := postPlan(k.e, "", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("plan of the export: %d %s", r.Status, r.Body)
	}
	if ws := warningsOf(r.JSON(), "resource_omitted"); len(ws) != 0 {
		t.Errorf("the export as it is: resource_omitted %v", ws)
	}

	// The usual slip: role/reader deleted from the edited export, and the
	// environment settings too.
	cfg := body["config"].(map[string]any)
	delete(cfg["roles"].(map[string]any), "reader")
	cfg["roles"].(map[string]any)["auditor"] = map[string]any{"display_name": "Auditor"}
	delete(cfg, "environment_settings")
	r = postPlan(k.e, "", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("plan: %d %s", r.Status, r.Body)
	}
	p := r.JSON()
	ws := warningsOf(p, "resource_omitted")
	if len(ws) != 2 {
		t.Fatalf("resource_omitted = %v, want role/reader and environment_settings/default", ws)
	}
	byTarget := map[string]map[string]any{}
	for _, w := range ws {
		byTarget[w["target"].(string)] = w
	}
	reader := byTarget["role/reader"]
	if reader == nil || reader["pointer"] != "/versions/role~1reader" {
		t.Fatalf("role/reader warning = %v", reader)
	}
	if d := reader["detail"].(string); !strings.Contains(d, "unchanged") || !strings.Contains(d, `"reader": null`) || !strings.Contains(d, "prune") {
		t.Errorf("detail %q does not say it is left unchanged, that null deletes it, or that prune does", d)
	}
	if s := byTarget["environment_settings/default"]; s == nil || s["pointer"] != "/versions/environment_settings~1default" ||
		!strings.Contains(s["detail"].(string), "unchanged") {
		t.Errorf("environment_settings/default warning = %v", s)
	}
	if changeIndex(p, "role/reader") >= 0 || p["summary"].(map[string]any)["delete"] != 0.0 {
		t.Errorf("the left-out role is a change: %v", p["changes"])
	}
	// A preview warns the same way.
	pv := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans?preview=true", Body: body})
	if pv.Status != http.StatusOK || !cmp.Equal(warningsOf(pv.JSON(), "resource_omitted"), ws) {
		t.Errorf("preview: %d, resource_omitted %v, want %v", pv.Status, warningsOf(pv.JSON(), "resource_omitted"), ws)
	}

	// With prune, the role is deleted and not warned of; the singleton's
	// type is not planned, so it still is.
	body["prune"] = true
	r = postPlan(k.e, "", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("plan with prune: %d %s", r.Status, r.Body)
	}
	p = r.JSON()
	var targets []string
	for _, w := range warningsOf(p, "resource_omitted") {
		targets = append(targets, w["target"].(string))
	}
	if !cmp.Equal(targets, []string{"environment_settings/default"}) {
		t.Errorf("with prune: resource_omitted targets %v, want only environment_settings/default", targets)
	}
	if i := changeIndex(p, "role/reader"); i < 0 || p["changes"].([]any)[i].(map[string]any)["action"] != "delete" {
		t.Errorf("with prune, role/reader is not deleted: %v", p["changes"])
	}

	// Mapped to null, it is a deletion: no warning.
	body["prune"] = false
	cfg["roles"].(map[string]any)["reader"] = nil
	r = postPlan(k.e, "", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("plan with null: %d %s", r.Status, r.Body)
	}
	for _, w := range warningsOf(r.JSON(), "resource_omitted") {
		if w["target"] == "role/reader" {
			t.Errorf("a deletion is warned of as left out: %v", w)
		}
	}
}

// TestRebaseWarnsOfEachFieldItReverts: a rebased plan that writes back,
// for a field that moved since its source was planned, the value the
// source was based on gets a reverts_moved_change warning at that change,
// naming the field and both values: a changed member, an array element
// added since, a resource deleted since. A field the rebase writes as the
// source meant (not the old value) is not warned of.
func TestRebaseWarnsOfEachFieldItReverts(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	// The source renames orders and billing.
	src := k.plan(`{"apis": {
	  "orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders v2",
	             "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600},
	  "billing": {"identifier": "https://api.shop.example/billing", "display_name": "Billing v2",
	              "scopes": [{"value": "read:billing"}], "token_lifetime_seconds": 3600}}}`, false)
	if ws := warningsOf(src, "reverts_moved_change"); len(ws) != 0 {
		t.Fatalf("a plan that is not a rebase: %v", ws)
	}
	// Since: orders gets another lifetime, another name and a scope more;
	// billing is deleted.
	k.planAndApply(`{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders (ops)",
	  "scopes": [{"value": "read:orders"}, {"value": "write:orders"}], "token_lifetime_seconds": 7200}, "billing": null}}`, false, nil)

	p := k.mustRebase(src["id"].(string))
	orders, billing := changeIndex(p, "api/orders"), changeIndex(p, "api/billing")
	ws := warningsOf(p, "reverts_moved_change")
	got := map[string][]string{}
	for _, w := range ws {
		got[w["pointer"].(string)] = append(got[w["pointer"].(string)], w["detail"].(string))
		if w["target"] != p["changes"].([]any)[mustIndex(t, w["pointer"].(string))].(map[string]any)["kind"].(string)+"/"+
			p["changes"].([]any)[mustIndex(t, w["pointer"].(string))].(map[string]any)["key"].(string) {
			t.Errorf("warning %v: target is not its change's", w)
		}
	}
	ordersPtr, billingPtr := "/changes/"+strconv.Itoa(orders), "/changes/"+strconv.Itoa(billing)
	if len(got) != 2 || len(got[ordersPtr]) != 2 || len(got[billingPtr]) != 1 {
		t.Fatalf("reverts_moved_change by pointer = %v, want two at %s (lifetime, scope) and one at %s", got, ordersPtr, billingPtr)
	}
	var lifetime, scope string
	for _, d := range got[ordersPtr] {
		switch {
		case strings.Contains(d, "token_lifetime_seconds"):
			lifetime = d
		case strings.Contains(d, "scopes"):
			scope = d
		}
		if strings.Contains(d, "display_name") {
			t.Errorf("display_name is written as the source meant, not reverted: %q", d)
		}
	}
	if !strings.Contains(lifetime, "3600") || !strings.Contains(lifetime, "7200") {
		t.Errorf("lifetime warning %q does not name both values", lifetime)
	}
	if !strings.Contains(scope, "write:orders") {
		t.Errorf("scope warning %q does not name the scope added since", scope)
	}
	if d := got[billingPtr][0]; !strings.Contains(d, "deleted") {
		t.Errorf("billing warning %q does not say it was deleted since", d)
	}
	// The warnings are stored with the plan.
	if stored := k.get("/v1/config-plans/" + p["id"].(string)); !cmp.Equal(stored["warnings"], p["warnings"]) {
		t.Errorf("stored warnings differ: %v", stored["warnings"])
	}

	// A rebase that writes every moved field as it is now warns of nothing.
	same := k.plan(`{"roles": {"reader": {"display_name": "Reader 2", "permissions": [{"api": "orders", "scope": "read:orders"}]}}}`, false)
	k.planAndApply(`{"roles": {"reader": {"display_name": "Reader 2", "permissions": []}}}`, false, nil)
	if ws := warningsOf(k.mustRebase(same["id"].(string)), "reverts_moved_change"); len(ws) != 1 || !strings.Contains(ws[0]["detail"].(string), "permissions") {
		t.Errorf("rebase that puts back the removed permission: %v, want one warning naming permissions", ws)
	}
	k.planAndApply(`{"roles": {"reader": {"display_name": "Reader 2", "permissions": [{"api": "orders", "scope": "read:orders"}]}}}`, false, nil)
	if ws := warningsOf(k.mustRebase(same["id"].(string)), "reverts_moved_change"); len(ws) != 0 {
		t.Errorf("a rebase that reverts nothing: %v", ws)
	}
}

func mustIndex(t *testing.T, ptr string) int {
	t.Helper()
	i, err := strconv.Atoi(strings.TrimPrefix(ptr, "/changes/"))
	if err != nil {
		t.Fatalf("pointer %q is not /changes/<i>", ptr)
	}
	return i
}
