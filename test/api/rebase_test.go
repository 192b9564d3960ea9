package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/ratelimit"
	"github.com/keenauth/configplans/test/apitest"
)

// rebase posts a rebase of the plan (body nil: none).
func (k *applyEnv) rebase(id string, body any) *apitest.Response {
	k.t.Helper()
	return k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":rebase", Body: body})
}

// mustRebase rebases the plan and fails the test unless 201.
func (k *applyEnv) mustRebase(id string) map[string]any {
	k.t.Helper()
	r := k.rebase(id, nil)
	if r.Status != http.StatusCreated {
		k.t.Fatalf("rebase %s: %d %s", id, r.Status, r.Body)
	}
	return r.JSON()
}

// changeSpecs maps kind/key → [action, spec] of every change of a plan.
func changeSpecs(p map[string]any) map[string][2]any {
	out := map[string][2]any{}
	for _, c := range p["changes"].([]any) {
		c := c.(map[string]any)
		out[c["kind"].(string)+"/"+c["key"].(string)] = [2]any{c["action"], c["spec"]}
	}
	return out
}

// desired maps kind/key → spec of every change of a plan: its desired state.
func desired(p map[string]any) map[string]any {
	out := map[string]any{}
	for ref, c := range changeSpecs(p) {
		out[ref] = c[1]
	}
	return out
}

const ordersAPI = `{"identifier": "https://api.shop.example/orders", "display_name": "Orders",
	"scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600}`

// TestRebasePlansTheSameDesiredStateAgainstNow: a plan whose api moved
// since it was planned is rebased into a new planned plan of the same specs
// and deletions, computed against the configuration now, with rebased_from
// and the moved api (both versions, the diff from the spec the source was
// based on to the spec now). The source keeps its status and gets a
// plan_rebased event; the rebase's plan_created names its source. The
// rebased plan applies where the source would conflict.
func TestRebasePlansTheSameDesiredStateAgainstNow(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	src := k.plan(`{
	  "apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders v2",
	           "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600}, "billing": null},
	  "roles": {"auditor": {"display_name": "Auditor"}}}`, false)
	srcID := src["id"].(string)
	if src["rebased_from"] != nil || !cmp.Equal(src["moved"], []any{}) {
		t.Errorf("a plan that is not a rebase: rebased_from %v, moved %v", src["rebased_from"], src["moved"])
	}
	// Since: the orders api gets another token lifetime.
	k.planAndApply(`{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
	  "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 7200}}}`, false, nil)

	r := k.rebase(srcID, nil)
	if r.Status != http.StatusCreated {
		t.Fatalf("rebase: %d %s", r.Status, r.Body)
	}
	p := r.JSON()
	id := p["id"].(string)
	if id == srcID || r.Header.Get("Location") != "/v1/config-plans/"+id || p["status"] != "planned" || p["prune"] != false {
		t.Errorf("rebased plan: id %v, Location %q, status %v, prune %v", id, r.Header.Get("Location"), p["status"], p["prune"])
	}
	if p["rebased_from"] != srcID {
		t.Errorf("rebased_from = %v, want %s", p["rebased_from"], srcID)
	}
	if d := cmp.Diff(src["types"], p["types"]); d != "" {
		t.Errorf("types (-source +rebase):\n%s", d)
	}
	if d := cmp.Diff(desired(src), desired(p)); d != "" {
		t.Errorf("desired state (-source +rebase):\n%s", d)
	}
	wantMoved := []any{map[string]any{"kind": "api", "key": "orders", "version_then": 1.0, "version_now": 2.0,
		"diff": []any{map[string]any{"op": "replace", "path": "/token_lifetime_seconds", "old": 3600.0, "value": 7200.0}}}}
	if d := cmp.Diff(wantMoved, p["moved"]); d != "" {
		t.Errorf("moved (-want +got):\n%s", d)
	}
	// Every other field is that of a fresh plan: the api's diff and base
	// version are from now.
	for _, c := range p["changes"].([]any) {
		c := c.(map[string]any)
		if c["key"] != "orders" {
			continue
		}
		want := []any{map[string]any{"op": "replace", "path": "/display_name", "old": "Orders", "value": "Orders v2"},
			map[string]any{"op": "replace", "path": "/token_lifetime_seconds", "old": 7200.0, "value": 3600.0}}
		if c["base_version"] != 2.0 || !cmp.Equal(c["diff"], want) {
			t.Errorf("orders change: base_version %v, diff %v", c["base_version"], c["diff"])
		}
	}
	if d := cmp.Diff(map[string]any{"create": 1.0, "update": 1.0, "delete": 1.0, "no_op": 0.0}, p["summary"]); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if got := k.get("/v1/config-plans/" + id); !cmp.Equal(got, p) {
		t.Errorf("GET of the rebased plan differs from its 201:\n%s", cmp.Diff(p, got))
	}

	// The source keeps its status, its own fields and gets plan_rebased.
	if got := k.get("/v1/config-plans/" + srcID); got["status"] != "planned" || got["rebased_from"] != nil || !cmp.Equal(got["moved"], []any{}) {
		t.Errorf("source after the rebase: status %v, rebased_from %v, moved %v", got["status"], got["rebased_from"], got["moved"])
	}
	srcEvents := k.events(srcID)
	if got := eventTypes(srcEvents); !slices.Equal(got, []string{"plan_created", "plan_rebased"}) {
		t.Fatalf("source events = %v", got)
	}
	if d := cmp.Diff(map[string]any{"plan_id": id}, srcEvents[1].Data); d != "" {
		t.Errorf("plan_rebased data (-want +got):\n%s", d)
	}
	evs := k.events(id)
	if len(evs) != 1 || evs[0].Type != "plan_created" || evs[0].Data["rebased_from"] != srcID {
		t.Errorf("rebased plan events = %+v", evs)
	}
	if first := k.events(srcID)[0]; first.Data["rebased_from"] != nil {
		t.Errorf("the source's plan_created names a source: %v", first.Data)
	}

	// The source conflicts; the rebased plan applies.
	assertProblem(t, k.apply(srcID, nil), 409, "config_conflict", []fieldProblem{{"/changes/1", "version_changed"}, {"/types/0", "type_changed"}})
	applied := k.mustApply(id, nil)
	if applied["rebased_from"] != srcID || applied["status"] != "applied" {
		t.Errorf("applied rebase: rebased_from %v, status %v", applied["rebased_from"], applied["status"])
	}
	cfg, _ := k.e.Export()
	if got := cfg["apis"].(map[string]any)["orders"].(map[string]any); got["display_name"] != "Orders v2" || got["token_lifetime_seconds"] != 3600.0 {
		t.Errorf("orders after the rebased plan: %v", got)
	}
}

// TestRebaseWithNothingMovedIsAFreshPlan: an empty body and {} are
// accepted; nothing moved gives moved: [].
func TestRebaseWithNothingMovedIsAFreshPlan(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	src := k.plan(envSettings("Renamed"), false)
	for _, body := range []any{nil, "", "{}", map[string]any{}} {
		r := k.rebase(src["id"].(string), body)
		if r.Status != http.StatusCreated {
			t.Fatalf("rebase with body %#v: %d %s", body, r.Status, r.Body)
		}
		p := r.JSON()
		if !cmp.Equal(p["moved"], []any{}) || p["rebased_from"] != src["id"] {
			t.Errorf("moved %v, rebased_from %v", p["moved"], p["rebased_from"])
		}
		if d := cmp.Diff(src["changes"], p["changes"]); d != "" {
			t.Errorf("changes (-source +rebase):\n%s", d)
		}
		if d := cmp.Diff(src["summary"], p["summary"]); d != "" {
			t.Errorf("summary (-source +rebase):\n%s", d)
		}
	}
	// A rebase of a rebase names its own source.
	r2 := k.mustRebase(src["id"].(string))
	r3 := k.mustRebase(r2["id"].(string))
	if r3["rebased_from"] != r2["id"] {
		t.Errorf("rebase of a rebase: rebased_from %v, want %v", r3["rebased_from"], r2["id"])
	}
}

// TestRebaseMovedListsGoneCreatedAndTypeChanges: a resource gone since has
// version_now null and a diff that removes it; one created since that the
// source creates has version_then null and a diff that adds it; a planned
// type whose content moved while none of the plan's resources of it did is
// {kind, key: null, code: type_changed}; a type whose resource moved is not
// listed again.
func TestRebaseMovedListsGoneCreatedAndTypeChanges(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	src := k.plan(`{
	  "apis": {"billing": {"identifier": "https://api.shop.example/billing", "display_name": "Billing 2",
	           "scopes": [{"value": "read:billing"}], "token_lifetime_seconds": 3600}},
	  "connections": {"corp": `+databaseConnection("Corp")+`},
	  "roles": {"reader": {"display_name": "Reader", "permissions": [{"api": "orders", "scope": "read:orders"}]}}}`, false)
	// Since: billing is deleted, corp is created (with another name), a
	// role outside the plan is created.
	k.planAndApply(`{"apis": {"billing": null}, "connections": {"corp": `+databaseConnection("Corp One")+`},
	  "roles": {"writer": {"display_name": "Writer"}}}`, false, nil)

	p := k.mustRebase(src["id"].(string))
	billingBefore := k.doc(`{"identifier": "https://api.shop.example/billing", "display_name": "Billing",
	  "scopes": [{"value": "read:billing"}], "token_lifetime_seconds": 3600}`)
	want := []any{
		map[string]any{"kind": "api", "key": "billing", "version_then": 1.0, "version_now": nil,
			"diff": []any{map[string]any{"op": "remove", "path": "", "old": billingBefore}}},
		map[string]any{"kind": "connection", "key": "corp", "version_then": nil, "version_now": 1.0,
			"diff": []any{map[string]any{"op": "add", "path": "", "value": k.doc(databaseConnection("Corp One"))}}},
		map[string]any{"kind": "role", "key": nil, "code": "type_changed"},
	}
	if d := cmp.Diff(want, p["moved"]); d != "" {
		t.Errorf("moved (-want +got):\n%s", d)
	}
	actions := map[string]any{}
	for ref, c := range changeSpecs(p) {
		actions[ref] = c[0]
	}
	if d := cmp.Diff(map[string]any{"api/billing": "create", "connection/corp": "update", "role/reader": "no_op"}, actions); d != "" {
		t.Errorf("actions of the rebased plan (-want +got):\n%s", d)
	}
}

// TestRebaseWithPruneDeletesWhatWasCreatedSince: the rebase of a prune
// plan keeps prune, and a resource of a pruned type created since the
// source was planned becomes a deletion.
func TestRebaseWithPruneDeletesWhatWasCreatedSince(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	src := k.plan(`{"roles": {"reader": {"display_name": "Reader", "permissions": [{"api": "orders", "scope": "read:orders"}]}}}`, true)
	k.planAndApply(`{"roles": {"writer": {"display_name": "Writer"}}}`, false, nil)

	p := k.mustRebase(src["id"].(string))
	if p["prune"] != true {
		t.Errorf("prune = %v", p["prune"])
	}
	got := changeSpecs(p)
	if d := cmp.Diff(map[string][2]any{"role/reader": {"no_op", got["role/reader"][1]}, "role/writer": {"delete", nil}}, got); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]any{map[string]any{"kind": "role", "key": nil, "code": "type_changed"}}, p["moved"]); d != "" {
		t.Errorf("moved (-want +got):\n%s", d)
	}
	k.mustApply(p["id"].(string), nil)
	cfg, _ := k.e.Export()
	if roles := cfg["roles"].(map[string]any); len(roles) != 1 || roles["reader"] == nil {
		t.Errorf("roles after the rebased prune: %v", roles)
	}
}

// TestRebaseOfEachSourceStatus: a planned, conflicted or expired source
// can be rebased and keeps its status; an applied or applying one is 409
// config_plan_not_applicable with plan_status, and nothing is stored.
func TestRebaseOfEachSourceStatus(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()

	conflictedID := k.planID(envSettings("A"), false)
	k.planAndApply(envSettings("B"), false, nil)
	assertProblem(t, k.apply(conflictedID, nil), 409, "config_conflict", []fieldProblem{{"/changes/0", "version_changed"}, {"/types/0", "type_changed"}})
	appliedID := k.planAndApply(envSettings("C"), false, nil)["id"].(string)
	applyingID := k.planID(envSettings("D"), false)
	k.exec("UPDATE config_plans SET status = 'applying', lease_token = 'held', lease_until = ? WHERE id = ?", time.Now().UTC().Add(time.Hour), applyingID)
	plannedID := k.planID(envSettings("E"), false)
	expiredID := k.planID(envSettings("F"), false)
	k.exec("UPDATE config_plans SET expires_at = ? WHERE id = ?", time.Now().UTC().Add(-time.Minute), expiredID)

	for _, c := range []struct{ id, status string }{{plannedID, "planned"}, {conflictedID, "conflicted"}, {expiredID, "expired"}} {
		p := k.mustRebase(c.id)
		if p["status"] != "planned" || p["rebased_from"] != c.id {
			t.Errorf("rebase of a %s plan: status %v, rebased_from %v", c.status, p["status"], p["rebased_from"])
		}
		if got := k.planStatus(c.id); got != c.status {
			t.Errorf("a %s source is %s after the rebase", c.status, got)
		}
	}
	for _, c := range []struct{ id, status string }{{appliedID, "applied"}, {applyingID, "applying"}} {
		plansBefore := k.count("config_plans", "")
		r := k.rebase(c.id, nil)
		assertProblem(t, r, 409, "config_plan_not_applicable", nil)
		if r.JSON()["plan_status"] != c.status {
			t.Errorf("plan_status = %v, want %s", r.JSON()["plan_status"], c.status)
		}
		if n := k.count("config_plans", ""); n != plansBefore {
			t.Errorf("a refused rebase stored a plan (%d → %d)", plansBefore, n)
		}
		if got := eventTypes(k.events(c.id)); slices.Contains(got, "plan_rebased") {
			t.Errorf("a refused rebase recorded plan_rebased: %v", got)
		}
	}
}

// rebaseCase is one row of the rebase's error order (§14).
type rebaseCase struct {
	name string
	// setup returns the plan to rebase, the body (nil: none) and the
	// secret ("" all permissions, "-" none), and any header.
	setup  func(k *applyEnv) (id string, body any, secret string, header map[string]string)
	opt    apitest.Options
	status int
	code   string
	errors []fieldProblem
	extra  map[string]any
}

func rebaseErrorCases() []rebaseCase {
	renamed := func(k *applyEnv) string { return k.planID(envSettings("Renamed"), false) }
	otherEnvSecret := func(k *applyEnv) string {
		ctx := context.Background()
		other, err := k.e.Domain.Environments.CreateEnvironment(ctx, "Other")
		if err != nil {
			k.t.Fatal(err)
		}
		ck, err := k.e.Domain.Keys.CreateKey(ctx, other.ID, config.AllPermissions())
		if err != nil {
			k.t.Fatal(err)
		}
		return ck.Secret
	}
	return []rebaseCase{
		{name: "rebase401MissingKey", status: 401, code: "unauthenticated",
			setup: func(k *applyEnv) (string, any, string, map[string]string) { return renamed(k), nil, "-", nil }},
		{name: "order401BeforeMalformedBody", status: 401, code: "unauthenticated",
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				return unknownPlanID, "{not json", "-", nil
			}},

		{name: "rebase400Malformed", status: 400, code: "malformed_request",
			setup: func(k *applyEnv) (string, any, string, map[string]string) { return renamed(k), "[1]", "", nil }},
		{name: "rebase400UnknownField", status: 400, code: "unknown_field", errors: []fieldProblem{{"/prune", "unknown_field"}},
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				return renamed(k), map[string]any{"prune": true}, "", nil
			}},
		{name: "order400BeforeIdempotency", status: 400, code: "unknown_field", errors: []fieldProblem{{"/x", "unknown_field"}},
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				return unknownPlanID, `{"x": 1}`, "", map[string]string{"Idempotency-Key": strings.Repeat("k", 300)}
			}},
		{name: "order400BeforeNotFound", status: 400, code: "malformed_request",
			setup: func(k *applyEnv) (string, any, string, map[string]string) { return unknownPlanID, "{", "", nil }},

		{name: "rebase400InvalidIdempotencyKey", status: 400, code: "invalid_idempotency_key",
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				return unknownPlanID, nil, "", map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}
			}},

		{name: "rebase404UnknownPlan", status: 404, code: "not_found",
			setup: func(k *applyEnv) (string, any, string, map[string]string) { return unknownPlanID, nil, "", nil }},
		{name: "rebase404MalformedPlanID", status: 404, code: "not_found",
			setup: func(k *applyEnv) (string, any, string, map[string]string) { return "cfgp_nope", nil, "", nil }},
		{name: "rebase404OtherEnvironment", status: 404, code: "not_found",
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				return renamed(k), nil, otherEnvSecret(k), nil
			}},
		{name: "order404BeforeForbidden", status: 404, code: "not_found",
			setup: func(k *applyEnv) (string, any, string, map[string]string) { return unknownPlanID, nil, k.e.Key(), nil }},

		{name: "rebase403ListsAllPermissions", status: 403, code: "insufficient_permissions",
			extra: map[string]any{"required_permissions": []any{"apis:read", "config:write", "connections:read"}},
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				id := k.planID(`{"connections": {"corp": `+databaseConnection("Corp")+`}, "apis": {"orders": `+ordersAPI+`}}`, false)
				// Write permissions do not stand in for the read ones.
				return id, nil, k.e.Key("config:read", "config:write", "connections:write", "apis:write", "apis:read"), nil
			}},
		{name: "order403BeforeRateLimit", status: 403, code: "insufficient_permissions",
			// The seed's plan and apply and this plan spend the quota.
			opt:   apitest.Options{RateLimit: ratelimit.Config{Quota: 3, Window: time.Hour, Inflight: 10}},
			extra: map[string]any{"required_permissions": []any{"config:write", "environment-settings:read"}},
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				return renamed(k), nil, k.e.Key("config:read", "environment-settings:read"), nil
			}},

		{name: "rebase429RateLimited", status: 429, code: "rate_limited", extra: map[string]any{"policy": "config_plan"},
			opt: apitest.Options{RateLimit: ratelimit.Config{Quota: 4, Window: time.Hour, Inflight: 10}},
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				// The seed's and this plan's creation and apply spend the
				// quota: 429 comes before the 409 of an applied source.
				return k.appliedPlan(), nil, "", nil
			}},

		{name: "rebase409Applied", status: 409, code: "config_plan_not_applicable", extra: map[string]any{"plan_status": "applied"},
			setup: func(k *applyEnv) (string, any, string, map[string]string) { return k.appliedPlan(), nil, "", nil }},

		{name: "rebase422ValidationFailedPointsIntoTheChanges", status: 422, code: "validation_failed",
			errors: []fieldProblem{{"/changes/0/spec/permissions/0/scope", "unknown_scope"}},
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				id := k.planID(`{"roles": {"auditor": {"display_name": "Auditor", "permissions": [{"api": "billing", "scope": "read:billing"}]}}}`, false)
				k.planAndApply(`{"apis": {"billing": {"identifier": "https://api.shop.example/billing", "display_name": "Billing",
				  "scopes": [{"value": "write:billing"}], "token_lifetime_seconds": 3600}}}`, false, nil)
				return id, nil, "", nil
			}},
		{name: "rebase422DeletionInUsePointsToTheChange", status: 422, code: "validation_failed",
			errors: []fieldProblem{{"/changes/0", "in_use"}},
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				id := k.planID(`{"apis": {"billing": null}}`, false)
				k.planAndApply(`{"roles": {"biller": {"display_name": "Biller", "permissions": [{"api": "billing", "scope": "read:billing"}]}}}`, false, nil)
				return id, nil, "", nil
			}},
		{name: "rebase422PrunedDeletionInUsePointsToPrune", status: 422, code: "validation_failed",
			errors: []fieldProblem{{"/prune", "in_use"}},
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				id := k.planID(`{"apis": {"orders": `+ordersAPI+`, "billing": {"identifier": "https://api.shop.example/billing",
				  "display_name": "Billing", "scopes": [{"value": "read:billing"}], "token_lifetime_seconds": 3600}}}`, true)
				k.planAndApply(`{"apis": {"extra": {"identifier": "https://api.shop.example/extra", "display_name": "Extra",
				  "scopes": [{"value": "x"}], "token_lifetime_seconds": 3600}},
				  "roles": {"extra-user": {"display_name": "Extra user", "permissions": [{"api": "extra", "scope": "x"}]}}}`, false, nil)
				return id, nil, "", nil
			}},
		{name: "rebase422PolicyConflictPointsIntoTheChanges", status: 422, code: "policy_conflict",
			errors: []fieldProblem{{"/changes/0/spec/database/min_password_length", "min_password_length"}},
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				id := k.planID(`{"connections": {"corp": {"type": "database", "display_name": "Corp", "active": true,
				  "database": {"requires_username": false, "min_password_length": 8}}}}`, false)
				k.putPolicies(`{"min_password_length": 12}`)
				return id, nil, "", nil
			}},
		{name: "order409BeforeValidation", status: 409, code: "config_plan_not_applicable", extra: map[string]any{"plan_status": "applied"},
			setup: func(k *applyEnv) (string, any, string, map[string]string) {
				id := k.planAndApply(`{"connections": {"corp": {"type": "database", "display_name": "Corp", "active": true,
				  "database": {"requires_username": false, "min_password_length": 8}}}}`, false, nil)["id"].(string)
				k.putPolicies(`{"min_password_length": 12}`)
				return id, nil, "", nil
			}},
	}
}

// TestRebaseErrorTable: every refusal of a rebase, in the order of §14;
// a refused rebase stores no plan and records no event on its source.
func TestRebaseErrorTable(t *testing.T) {
	t.Parallel()
	for _, tc := range rebaseErrorCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := newApplyEnv(t, tc.opt)
			k.seed()
			id, body, secret, header := tc.setup(k)
			plansBefore := k.count("config_plans", "")
			var eventsBefore int64
			if config.ValidID(config.PrefixPlan, id) {
				eventsBefore = k.count("plan_events", "plan_id = ?", id)
			}
			r := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":rebase", Body: body, Secret: secret, Header: header})
			assertProblem(t, r, tc.status, tc.code, tc.errors)
			for name, want := range tc.extra {
				if d := cmp.Diff(want, r.JSON()[name]); d != "" {
					t.Errorf("%s (-want +got):\n%s", name, d)
				}
			}
			if n := k.count("config_plans", ""); n != plansBefore {
				t.Errorf("a refused rebase stored a plan (%d → %d)", plansBefore, n)
			}
			if config.ValidID(config.PrefixPlan, id) {
				if n := k.count("plan_events", "plan_id = ?", id); n != eventsBefore {
					t.Errorf("a refused rebase recorded an event on its source (%d → %d)", eventsBefore, n)
				}
			}
		})
	}
}

// TestRebaseIdempotencyKey: a rebase retried with its Idempotency-Key is
// replayed (one plan, one plan_rebased event, no rate limit spent); the key
// reused for another source or for the apply of the same plan is refused.
func TestRebaseIdempotencyKey(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{RateLimit: ratelimit.Config{Quota: 4, Window: time.Hour, Inflight: 10}})
	srcID := k.planID(envSettings("Renamed"), false)
	other := k.planID(envSettings("Other"), false)
	key := map[string]string{"Idempotency-Key": "rebase-1"}
	path := "/v1/config-plans/" + srcID + ":rebase"
	first := k.e.Do(apitest.Request{Method: "POST", Path: path, Header: key})
	if first.Status != http.StatusCreated || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first rebase: %d %s (replayed %q)", first.Status, first.Body, first.Header.Get("Idempotent-Replayed"))
	}
	for _, body := range []any{nil, "{}"} {
		again := k.e.Do(apitest.Request{Method: "POST", Path: path, Header: key, Body: body})
		if again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
			t.Errorf("retry with body %v: %d replayed %q\n%s\nwant\n%s", body, again.Status, again.Header.Get("Idempotent-Replayed"), again.Body, first.Body)
		}
	}
	if n := k.count("config_plans", "rebased_from = ?", srcID); n != 1 {
		t.Errorf("%d rebases stored, want 1", n)
	}
	if got := eventTypes(k.events(srcID)); !slices.Equal(got, []string{"plan_created", "plan_rebased"}) {
		t.Errorf("source events = %v", got)
	}
	assertProblem(t, k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + other + ":rebase", Header: key}),
		422, "idempotency_key_mismatch", nil)
	assertProblem(t, k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + srcID + ":apply", Header: key}),
		422, "idempotency_key_mismatch", nil)
	// Two plans and one rebase spent 3 of the 4: the replays spent nothing.
	if r := k.rebase(srcID, nil); r.Status != http.StatusCreated {
		t.Errorf("the fourth request: %d %s", r.Status, r.Body)
	}
	assertProblem(t, k.rebase(srcID, nil), 429, "rate_limited", nil)
}

// TestRebaseCountsAgainstThePlanRateLimit: a rebase spends the config_plan
// quota shared with plan creation and apply, and carries its headers.
func TestRebaseCountsAgainstThePlanRateLimit(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{RateLimit: ratelimit.Config{Quota: 2, Window: time.Minute, Inflight: 10}})
	srcID := k.planID(envSettings("Renamed"), false)
	r := k.rebase(srcID, nil)
	if r.Status != http.StatusCreated {
		t.Fatalf("rebase: %d %s", r.Status, r.Body)
	}
	if !strings.Contains(r.Header.Get("RateLimit-Policy"), `"config_plan";q=2;w=60`) || !strings.Contains(r.Header.Get("RateLimit"), `"config_plan";r=0`) {
		t.Errorf("rate-limit headers: RateLimit-Policy %q, RateLimit %q", r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"))
	}
	r = k.rebase(srcID, nil)
	assertProblem(t, r, 429, "rate_limited", nil)
	if r.JSON()["policy"] != "config_plan" || r.Header.Get("Retry-After") == "" {
		t.Errorf("429: policy %v, Retry-After %q", r.JSON()["policy"], r.Header.Get("Retry-After"))
	}
	assertProblem(t, k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": k.doc(envSettings("Again"))}}),
		429, "rate_limited", nil)
}

// TestRebase413WhenTheRebasedPlanIsTooLarge: the plan a rebase computes is
// bounded as plan creation's is, what moved included; nothing is stored.
func TestRebase413WhenTheRebasedPlanIsTooLarge(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	small := func(name string) map[string]any {
		return map[string]any{"identifier": "https://api.shop.example/" + name, "display_name": name, "token_lifetime_seconds": 3600}
	}
	k.mustApply(k.e.Plan(map[string]any{"apis": map[string]any{"big-0": small("big-0"), "big-1": small("big-1")}}, false)["id"].(string), nil)
	src := k.e.Plan(map[string]any{"apis": map[string]any{"big-0": small("big-0"), "big-1": small("big-1")},
		"environment_settings": k.doc(envSettings("Renamed"))["environment_settings"]}, false)
	// Since: each api grew to ~3.7 MB, in a plan of its own. The rebase
	// removes both lists (~7.4 MB of old values) and lists what moved
	// (~7.4 MB more).
	for _, name := range []string{"big-0", "big-1"} {
		k.mustApply(k.e.Plan(map[string]any{"apis": map[string]any{name: bigAPI(name, 8800)}}, false)["id"].(string), nil)
	}
	plansBefore := k.count("config_plans", "")
	assertProblem(t, k.rebase(src["id"].(string), nil), 413, "config_document_too_large", nil)
	if n := k.count("config_plans", ""); n != plansBefore {
		t.Errorf("a refused rebase stored a plan (%d → %d)", plansBefore, n)
	}
	if got := eventTypes(k.events(src["id"].(string))); !slices.Equal(got, []string{"plan_created"}) {
		t.Errorf("source events = %v", got)
	}
}

// TestRebaseOfOIDCNullKeepsTheMaterialAsItIsNow: a source whose document
// said oidc: null (keep the material) asks again for the material the
// connection has when it is rebased, not for the material it had: no
// secret, no write of the material.
func TestRebaseOfOIDCNullKeepsTheMaterialAsItIsNow(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	secrets := func(v string) map[string]any {
		return map[string]any{"resolved_secrets": map[string]any{acmeSecret: v}, "sp_host": secHost}
	}
	k.planAndApply(`{"connections": {"acme-sso": `+acmeInactive+`}}`, false, secrets("s1"))
	src := k.plan(`{"connections": {"acme-sso": {"type": "enterprise", "display_name": "ACME 2", "active": false, "oidc": null}}}`, false)
	if src["requires_sp_host"] != false || !cmp.Equal(src["required_secrets"], []any{}) {
		t.Fatalf("source: requires_sp_host %v, required_secrets %v", src["requires_sp_host"], src["required_secrets"])
	}
	other := `{"issuer": "https://idp2.acme.example", "client_id": "abc", "scopes": ["openid"]}`
	k.planAndApply(`{"connections": {"acme-sso": {"type": "enterprise", "display_name": "ACME", "active": false, "oidc": `+other+`}}}`, false, secrets("s2"))

	p := k.mustRebase(src["id"].(string))
	c := p["changes"].([]any)[0].(map[string]any)
	if d := cmp.Diff(k.doc(other), c["spec"].(map[string]any)["oidc"]); d != "" {
		t.Errorf("oidc of the rebased change (-now +got):\n%s", d)
	}
	want := []any{map[string]any{"op": "replace", "path": "/display_name", "old": "ACME", "value": "ACME 2"}}
	if d := cmp.Diff(want, c["diff"]); d != "" {
		t.Errorf("diff (-want +got):\n%s", d)
	}
	if c["requires_secret"] != false || p["requires_sp_host"] != false || !cmp.Equal(p["required_secrets"], []any{}) {
		t.Errorf("rebased plan: requires_secret %v, requires_sp_host %v, required_secrets %v", c["requires_secret"], p["requires_sp_host"], p["required_secrets"])
	}
}
