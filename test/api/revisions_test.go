package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/ratelimit"
	"github.com/keenauth/configplans/service"
	"github.com/keenauth/configplans/test/apitest"
)

// revisionIDs lists the revisions with limit, following next_cursor to the
// end, and checks the pages.
func (k *applyEnv) revisionIDs(limit int) []string {
	k.t.Helper()
	var ids []string
	path := fmt.Sprintf("/v1/config-revisions?limit=%d", limit)
	for {
		page := k.get(path)
		data := page["data"].([]any)
		for _, d := range data {
			d := d.(map[string]any)
			if _, ok := d["resources"]; ok {
				k.t.Errorf("a listed revision holds its resources")
			}
			ids = append(ids, d["id"].(string))
		}
		if page["has_more"] != true {
			if page["next_cursor"] != nil {
				k.t.Errorf("last page with next_cursor %v", page["next_cursor"])
			}
			return ids
		}
		if len(data) != limit {
			k.t.Errorf("a page with more after it holds %d entries, want %d", len(data), limit)
		}
		path = fmt.Sprintf("/v1/config-revisions?limit=%d&cursor=%s", limit, page["next_cursor"])
	}
}

// applyRenames applies n plans that rename the environment and returns
// their revisions, oldest first.
func (k *applyEnv) applyRenames(n int) []string {
	k.t.Helper()
	revs := make([]string, n)
	for i := range revs {
		revs[i] = k.planAndApply(envSettings(fmt.Sprintf("Shop %d", i)), false, nil)["revision_id"].(string)
	}
	return revs
}

// TestRevisionsKeepTheFiftyMostRecent applies 55 plans: the 50 most recent
// revisions are listed (newest first, across pages) and kept, the 5 oldest
// are deleted.
func TestRevisionsKeepTheFiftyMostRecent(t *testing.T) {
	t.Parallel()
	var pruned int
	k := newApplyEnv(t, apitest.Options{Hooks: plans.Hooks{OnRevisionsPruned: func(n int) { pruned += n }}})
	revs := k.applyRenames(55)
	want := slices.Clone(revs[5:])
	slices.Reverse(want)
	if d := cmp.Diff(want, k.revisionIDs(100)); d != "" {
		t.Errorf("listed revisions (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, k.revisionIDs(20)); d != "" {
		t.Errorf("revisions listed 20 at a time (-want +got):\n%s", d)
	}
	if n := k.count("config_revisions", ""); n != 50 {
		t.Errorf("%d revisions stored, want 50", n)
	}
	if pruned != 5 {
		t.Errorf("OnRevisionsPruned counted %d, want 5", pruned)
	}
	for _, id := range revs[:5] {
		r := k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + id})
		assertProblem(t, r, 404, "not_found", nil)
	}
	if got := k.get("/v1/config-revisions/" + revs[5])["id"]; got != revs[5] {
		t.Errorf("oldest kept revision = %v", got)
	}
	// The plan whose revision was pruned still names it.
	applied := k.get("/v1/config-plans?status=applied&limit=100")["data"].([]any)
	if len(applied) != 55 {
		t.Errorf("%d applied plans, want 55", len(applied))
	}
	for _, bad := range []string{"limit=0", "limit=101", "limit=x", "cursor=nope", "cursor=cfgp_01hzzzzzzzzzzzzzzzzzzzzzzz"} {
		r := k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions?" + bad})
		assertProblem(t, r, 400, "malformed_request", nil)
	}
}

// TestRevisionsExpireAfterNinetyDays: a revision older than 90 days is
// neither listed nor returned, and the sweep deletes it.
func TestRevisionsExpireAfterNinetyDays(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	revs := k.applyRenames(2)
	k.e.Clock.Advance(89 * 24 * time.Hour)
	if got := k.revisionIDs(20); len(got) != 2 {
		t.Fatalf("revisions after 89 days = %v", got)
	}
	newer := k.applyRenames(1)[0]

	k.e.Clock.Advance(24*time.Hour + time.Minute)
	if d := cmp.Diff([]string{newer}, k.revisionIDs(20)); d != "" {
		t.Errorf("revisions after 90 days (-want +got):\n%s", d)
	}
	for _, id := range revs {
		assertProblem(t, k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + id}), 404, "not_found", nil)
	}
	if n := k.count("config_revisions", ""); n != 3 {
		t.Fatalf("%d revisions stored before the sweep, want 3", n)
	}
	n, err := k.e.Domain.Retention.PruneRevisions(context.Background())
	if err != nil || n != 2 {
		t.Errorf("PruneRevisions = %d, %v; want 2", n, err)
	}
	if n := k.count("config_revisions", ""); n != 1 {
		t.Errorf("%d revisions stored after the sweep, want 1", n)
	}
	if got := k.get("/v1/config-revisions/" + newer)["id"]; got != newer {
		t.Errorf("kept revision = %v", got)
	}
}

// TestRevisionPermissions: listing needs config:read; reading one also
// needs the read permission of every type it holds.
func TestRevisionPermissions(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	rev := k.planAndApply(`{"connections": {"corp": `+databaseConnection("Corp")+`}, `+envSettings("Renamed")[1:], false, nil)["revision_id"].(string)

	configRead := k.e.Key("config:read")
	r := k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions", Secret: configRead})
	if r.Status != http.StatusOK {
		t.Errorf("list with config:read: %d %s", r.Status, r.Body)
	}
	r = k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions", Secret: k.e.Key("connections:read")})
	assertProblem(t, r, 403, "insufficient_permissions", nil)
	if d := cmp.Diff([]any{"config:read"}, r.JSON()["required_permissions"]); d != "" {
		t.Errorf("required_permissions of the list:\n%s", d)
	}

	wantPerms := []any{"config:read", "connections:read", "environment-settings:read"}
	for _, secret := range []string{configRead, k.e.Key("config:read", "connections:read", "environment-settings:write")} {
		r = k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + rev, Secret: secret})
		assertProblem(t, r, 403, "insufficient_permissions", nil)
		if d := cmp.Diff(wantPerms, r.JSON()["required_permissions"]); d != "" {
			t.Errorf("required_permissions of a revision (-want +got):\n%s", d)
		}
	}
	r = k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + rev, Secret: k.e.Key("config:read", "connections:read", "environment-settings:read")})
	if r.Status != http.StatusOK {
		t.Errorf("get with its permissions: %d %s", r.Status, r.Body)
	}
	// Another environment's revision, or none, is not found.
	for _, id := range []string{"cfgr_01hzzzzzzzzzzzzzzzzzzzzzzz", "cfgr_nope"} {
		assertProblem(t, k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + id}), 404, "not_found", nil)
	}
	other := apitest.Setup(t, apitest.Options{Database: k.e.DB, Redis: k.e.Redis, Prefix: k.e.Prefix})
	assertProblem(t, other.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + rev}), 404, "not_found", nil)
}

// TestRestoreRevisionBringsEveryResourceBack: the restore of a revision is
// a planned plan that deletes what the apply created, puts back what it
// updated and re-creates what it deleted; applied, the export is what it
// was before.
func TestRestoreRevisionBringsEveryResourceBack(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	before, _ := k.e.Export()
	res := k.planAndApply(`{
	  "connections": {"github": null, "corp": `+databaseConnection("Corp")+`},
	  "roles": {"reader": null},
	  "apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders v2",
	           "scopes": [{"value": "read:orders"}, {"value": "write:orders"}], "token_lifetime_seconds": 7200}},
	  "environment_settings": {"display_name": "Shop 2", "default_locale": "fr", "session_lifetime_hours": 12}}`,
		false, map[string]any{"confirm_deletions": []any{"connection/github"}})
	rev := res["revision_id"].(string)
	revisionsBefore := k.count("config_revisions", "")

	r := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-revisions/" + rev + ":restore"})
	if r.Status != http.StatusCreated {
		t.Fatalf("restore: %d %s", r.Status, r.Body)
	}
	p := r.JSON()
	id := p["id"].(string)
	if r.Header.Get("Location") != "/v1/config-plans/"+id || p["status"] != "planned" || p["prune"] != false {
		t.Errorf("restore plan: Location %q, status %v, prune %v", r.Header.Get("Location"), p["status"], p["prune"])
	}
	if d := cmp.Diff(map[string]any{"create": 2.0, "update": 2.0, "delete": 1.0, "no_op": 0.0}, p["summary"]); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	actions := map[string]any{}
	for _, c := range p["changes"].([]any) {
		c := c.(map[string]any)
		actions[fmt.Sprint(c["kind"], "/", c["key"])] = c["action"]
	}
	wantActions := map[string]any{"connection/corp": "delete", "connection/github": "create", "role/reader": "create",
		"api/orders": "update", "environment_settings/default": "update"}
	if d := cmp.Diff(wantActions, actions); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if n := k.count("config_revisions", ""); n != revisionsBefore {
		t.Errorf("restoring wrote a revision")
	}

	k.mustApply(id, map[string]any{"confirm_deletions": []any{"connection/corp"}})
	after, _ := k.e.Export()
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("the restored configuration differs from the one before (-before +after):\n%s", d)
	}

	assertProblem(t, k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-revisions/cfgr_01hzzzzzzzzzzzzzzzzzzzzzzz:restore"}),
		404, "not_found", nil)
	assertProblem(t, k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-revisions/" + rev + ":restore", Body: `{"x": 1}`}),
		400, "unknown_field", []fieldProblem{{"/x", "unknown_field"}})
}

// TestRestoreNeedsThePermissionsOfPlanCreation: config:write and the read
// permission of every type of the revision, as for creating the plan.
func TestRestoreNeedsThePermissionsOfPlanCreation(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	rev := k.planAndApply(`{"connections": {"corp": `+databaseConnection("Corp")+`}, `+envSettings("Renamed")[1:], false, nil)["revision_id"].(string)
	restore := func(secret string) *apitest.Response {
		return k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-revisions/" + rev + ":restore", Secret: secret})
	}
	r := restore(k.e.Key("config:read", "connections:read", "environment-settings:read"))
	assertProblem(t, r, 403, "insufficient_permissions", nil)
	if d := cmp.Diff([]any{"config:write", "connections:read", "environment-settings:read"}, r.JSON()["required_permissions"]); d != "" {
		t.Errorf("required_permissions (-want +got):\n%s", d)
	}
	if r := restore(k.e.Key("config:write", "connections:read", "environment-settings:read")); r.Status != http.StatusCreated {
		t.Errorf("restore with the permissions of plan creation: %d %s", r.Status, r.Body)
	}
}

// TestRestoreCountsAgainstTheRateLimit: restores share the config_plan
// quota with plan creation and apply.
func TestRestoreCountsAgainstTheRateLimit(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{RateLimit: ratelimit.Config{Quota: 2, Window: time.Minute, Inflight: 10}})
	// The revision is made on the domain service, past the limiter.
	ctx := context.Background()
	a, err := k.e.Domain.Keys.Authenticate(ctx, k.e.Secret)
	if err != nil {
		t.Fatal(err)
	}
	a.RequestID = config.NewID(config.PrefixRequest)
	pr, err := service.ParsePlanRequest([]byte(`{"config": ` + envSettings("Renamed") + `}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := k.e.Domain.Plans.CreatePlan(ctx, a, pr)
	if err != nil {
		t.Fatal(err)
	}
	res, err := k.e.Domain.Plans.Apply(ctx, a, p.ID, &plans.ApplyRequest{}, plans.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/config-revisions/" + *res.Plan.RevisionID + ":restore"
	for i := range 2 {
		if r := k.e.Do(apitest.Request{Method: "POST", Path: path}); r.Status != http.StatusCreated {
			t.Fatalf("restore %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := k.e.Do(apitest.Request{Method: "POST", Path: path})
	assertProblem(t, r, 429, "rate_limited", nil)
	if r.JSON()["policy"] != "config_plan" || r.Header.Get("Retry-After") == "" {
		t.Errorf("429: policy %v, Retry-After %q", r.JSON()["policy"], r.Header.Get("Retry-After"))
	}
	r = k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": k.doc(envSettings("Again"))}})
	assertProblem(t, r, 429, "rate_limited", nil)
	if n := k.count("config_plans", ""); n != 3 {
		t.Errorf("%d plans, want 3 (the first and two restores)", n)
	}
}

// TestRestoreBringsADeletedConnectionBackWithItsID: the callback URL
// registered at the identity provider names the connection id, so a
// restored connection keeps the id it had.
func TestRestoreBringsADeletedConnectionBackWithItsID(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	connID := func() string {
		var id string
		k.e.GormDB().Raw("SELECT resource_id FROM resources WHERE environment_id = ? AND kind = 'connection' AND key = 'github'", k.e.EnvID).Scan(&id)
		return id
	}
	former := connID()
	if former == "" {
		t.Fatal("the seed has no connection github")
	}
	res := k.planAndApply(`{"connections": {"github": null}}`, false, map[string]any{"confirm_deletions": []any{"connection/github"}})
	r := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-revisions/" + res["revision_id"].(string) + ":restore"})
	if r.Status != http.StatusCreated {
		t.Fatalf("restore: %d %s", r.Status, r.Body)
	}
	p := r.JSON()
	change := p["changes"].([]any)[0].(map[string]any)
	if change["action"] != "create" || change["resource_id"] != former {
		t.Fatalf("restore change = %v, want a create naming %s", change, former)
	}
	k.mustApply(p["id"].(string), map[string]any{})
	if got := connID(); got != former {
		t.Errorf("restored connection id = %s, want %s", got, former)
	}
}
