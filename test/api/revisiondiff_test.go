package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/ratelimit"
	"github.com/keenauth/configplans/test/apitest"
)

// TestRevisionDiffComparesEachResourceWithNow: every resource of a
// revision, in the revision's order, with its recorded version and spec
// beside today's (null when gone) and the diff from today's spec to the
// recorded one; [] when they are equal. It writes nothing and takes no rate
// limit.
func TestRevisionDiffComparesEachResourceWithNow(t *testing.T) {
	t.Parallel()
	// The seed, the revision's plan and the later plan spend the quota.
	k := newApplyEnv(t, apitest.Options{RateLimit: ratelimit.Config{Quota: 6, Window: time.Hour, Inflight: 10}})
	k.seed()
	before, _ := k.e.Export()
	rev := k.planAndApply(`{
	  "apis": {"billing": null, "orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders v2",
	           "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600}},
	  "connections": {"corp": `+databaseConnection("Corp")+`},
	  "roles": {"auditor": {"display_name": "Auditor"}},
	  "environment_settings": {"display_name": "Shop 2", "default_locale": "en", "session_lifetime_hours": 168}}`, false, nil)["revision_id"].(string)
	// Since: orders is back as it was, corp is gone, the environment is
	// renamed again.
	k.planAndApply(`{"apis": {"orders": `+ordersAPI+`}, "connections": {"corp": null},
	  "environment_settings": {"display_name": "Shop 3", "default_locale": "en", "session_lifetime_hours": 168}}`,
		false, map[string]any{"confirm_deletions": []string{"connection/corp"}})
	now, _ := k.e.Export()

	counts := func() [3]int64 {
		return [3]int64{k.count("config_plans", ""), k.count("plan_events", ""), k.count("config_revisions", "")}
	}
	written := counts()
	got := k.get("/v1/config-revisions/" + rev + "/diff")
	if got["object"] != "config_revision_diff" || got["revision_id"] != rev {
		t.Errorf("object %v, revision_id %v", got["object"], got["revision_id"])
	}
	apis, settingsNow := before["apis"].(map[string]any), now["environment_settings"].(map[string]any)
	auditor := now["roles"].(map[string]any)["auditor"]
	want := map[string]any{
		"api/billing": map[string]any{"kind": "api", "key": "billing", "version_before": 1.0, "version_now": nil,
			"spec_before": apis["billing"], "spec_now": nil, "diff": []any{map[string]any{"op": "add", "path": "", "value": apis["billing"]}}},
		"api/orders": map[string]any{"kind": "api", "key": "orders", "version_before": 1.0, "version_now": 3.0,
			"spec_before": apis["orders"], "spec_now": apis["orders"], "diff": []any{}},
		"connection/corp": map[string]any{"kind": "connection", "key": "corp", "version_before": nil, "version_now": nil,
			"spec_before": nil, "spec_now": nil, "diff": []any{}},
		"role/auditor": map[string]any{"kind": "role", "key": "auditor", "version_before": nil, "version_now": 1.0,
			"spec_before": nil, "spec_now": auditor, "diff": []any{map[string]any{"op": "remove", "path": "", "old": auditor}}},
		"environment_settings/default": map[string]any{"kind": "environment_settings", "key": "default", "version_before": 1.0, "version_now": 3.0,
			"spec_before": before["environment_settings"], "spec_now": settingsNow,
			"diff": []any{map[string]any{"op": "replace", "path": "/display_name", "old": "Shop 3", "value": "Shop"}}},
	}
	gotByRef := map[string]any{}
	var order []string
	for _, r := range got["resources"].([]any) {
		r := r.(map[string]any)
		ref := r["kind"].(string) + "/" + r["key"].(string)
		gotByRef[ref] = r
		order = append(order, ref)
	}
	if d := cmp.Diff(want, gotByRef); d != "" {
		t.Errorf("resources (-want +got):\n%s", d)
	}
	var revOrder []string
	for _, r := range k.get("/v1/config-revisions/" + rev)["resources"].([]any) {
		r := r.(map[string]any)
		revOrder = append(revOrder, r["kind"].(string)+"/"+r["key"].(string))
	}
	if d := cmp.Diff(revOrder, order); d != "" {
		t.Errorf("order (-revision +diff):\n%s", d)
	}
	// The quota is spent: the diff still answers, and wrote nothing.
	if r := k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + rev + "/diff"}); r.Status != http.StatusOK || r.Header.Get("RateLimit") != "" {
		t.Errorf("a diff with the quota spent: %d, RateLimit %q", r.Status, r.Header.Get("RateLimit"))
	}
	assertProblem(t, k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": k.doc(envSettings("X"))}}),
		429, "rate_limited", nil)
	if got := counts(); got != written {
		t.Errorf("plans, events, revisions: %v → %v", written, got)
	}
}

// TestRevisionDiffPermissionsAndErrors: the refusals of GET
// /v1/config-revisions/{id}: 401, 404 (unknown, malformed, another
// environment's; before 403), 403 listing config:read and the read
// permission of every type of the revision.
func TestRevisionDiffPermissionsAndErrors(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	rev := k.planAndApply(`{"connections": {"corp": `+databaseConnection("Corp")+`}, `+envSettings("Renamed")[1:], false, nil)["revision_id"].(string)
	diff := func(id, secret string) *apitest.Response {
		return k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + id + "/diff", Secret: secret})
	}
	assertProblem(t, diff(rev, "-"), 401, "unauthenticated", nil)
	for _, id := range []string{unknownPlanID, "cfgr_01hzzzzzzzzzzzzzzzzzzzzzzz", "cfgr_nope"} {
		assertProblem(t, diff(id, ""), 404, "not_found", nil)
		assertProblem(t, diff(id, k.e.Key()), 404, "not_found", nil)
	}
	wantPerms := []any{"config:read", "connections:read", "environment-settings:read"}
	for _, secret := range []string{k.e.Key("config:read"), k.e.Key("config:write", "connections:read", "environment-settings:read")} {
		r := diff(rev, secret)
		assertProblem(t, r, 403, "insufficient_permissions", nil)
		if d := cmp.Diff(wantPerms, r.JSON()["required_permissions"]); d != "" {
			t.Errorf("required_permissions (-want +got):\n%s", d)
		}
	}
	if r := diff(rev, k.e.Key("config:read", "connections:read", "environment-settings:read")); r.Status != http.StatusOK {
		t.Errorf("with the permissions of the revision: %d %s", r.Status, r.Body)
	}
	other := apitest.Setup(t, apitest.Options{Database: k.e.DB, Redis: k.e.Redis, Prefix: k.e.Prefix})
	assertProblem(t, other.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + rev + "/diff"}), 404, "not_found", nil)
	assertProblem(t, k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-revisions/" + rev + "/diff"}), 405, "method_not_allowed", nil)
}
