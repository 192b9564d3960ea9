package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// applyEnv is an API over its own database with the helpers of the apply
// tests.
type applyEnv struct {
	t *testing.T
	e *apitest.Env
	// lastPath is the path of the table case's apply.
	lastPath string
}

func newApplyEnv(t *testing.T, opt apitest.Options) *applyEnv {
	t.Helper()
	return &applyEnv{t: t, e: apitest.Setup(t, opt)}
}

// applySeed is the configuration most apply tests start from: two
// connections (the database one used by the application), two APIs (billing
// referenced by nothing), a role and an application.
const applySeed = `{
  "connections": {
    "db-main": {"type": "database", "display_name": "Main DB", "active": true, "database": {"requires_username": false}},
    "github":  {"type": "social", "display_name": "GitHub", "active": true, "social": {"provider": "github", "use_own_credentials": false}}
  },
  "apis": {
    "orders":  {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
                "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600},
    "billing": {"identifier": "https://api.shop.example/billing", "display_name": "Billing",
                "scopes": [{"value": "read:billing"}], "token_lifetime_seconds": 3600}
  },
  "roles": {"reader": {"display_name": "Reader", "permissions": [{"api": "orders", "scope": "read:orders"}]}},
  "applications": {"portal": {"display_name": "Portal", "type": "regular_web",
                   "callback_urls": ["https://portal.shop.example/callback"],
                   "connections": ["db-main"], "api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}}
}`

// Documents the tests plan again and again.
const (
	acmeInactive = `{"type": "enterprise", "display_name": "ACME", "active": false,
		"oidc": {"issuer": "https://idp.acme.example", "client_id": "abc", "scopes": ["openid"]}}`
	acmeActive = `{"type": "enterprise", "display_name": "ACME", "active": true,
		"oidc": {"issuer": "https://idp.acme.example", "client_id": "abc", "scopes": ["openid"]}}`
	acmeSecret = "KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET"
	ownGitHub  = `{"type": "social", "display_name": "GitHub Own", "active": true,
		"social": {"provider": "github", "use_own_credentials": true, "client_id": "cid"}}`
	ownGitHubSecret = "KEENAUTH_CONNECTION_GH_OWN_CLIENT_SECRET"
)

func envSettings(name string) string {
	return `{"environment_settings": {"display_name": "` + name + `", "default_locale": "en", "session_lifetime_hours": 168}}`
}

func databaseConnection(display string) string {
	return `{"type": "database", "display_name": "` + display + `", "active": true, "database": {"requires_username": false}}`
}

// doc parses a JSON document of the test.
func (k *applyEnv) doc(s string) map[string]any {
	k.t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		k.t.Fatalf("test document: %v\n%s", err, s)
	}
	return m
}

// plan creates a plan of the document and returns it.
func (k *applyEnv) plan(doc string, prune bool) map[string]any {
	k.t.Helper()
	return k.e.Plan(k.doc(doc), prune)
}

func (k *applyEnv) planID(doc string, prune bool) string {
	k.t.Helper()
	return k.plan(doc, prune)["id"].(string)
}

// apply posts an apply of the plan with body (nil: no body).
func (k *applyEnv) apply(id string, body any) *apitest.Response {
	k.t.Helper()
	return k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Body: body})
}

// mustApply applies the plan and fails the test unless 200.
func (k *applyEnv) mustApply(id string, body any) map[string]any {
	k.t.Helper()
	return k.e.Apply(id, body)
}

// planAndApply plans the document and applies it with body.
func (k *applyEnv) planAndApply(doc string, prune bool, body any) map[string]any {
	k.t.Helper()
	return k.mustApply(k.planID(doc, prune), body)
}

// seed applies applySeed.
// planUsedLater plans doc, which deletes the connection db-main, while
// the application portal does not use it, then makes portal use it again:
// plan creation refuses a deletion in use, so only a reference that
// appears after planning reaches the apply's row 15.
func (k *applyEnv) planUsedLater(doc string) string {
	k.t.Helper()
	portal := func(connection string) string {
		return `{"applications": {"portal": {"display_name": "Portal", "type": "regular_web",
		  "callback_urls": ["https://portal.shop.example/callback"], "connections": ["` + connection + `"],
		  "api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}}}`
	}
	k.planAndApply(portal("github"), false, nil)
	id := k.planID(doc, false)
	k.planAndApply(portal("db-main"), false, nil)
	return id
}

func (k *applyEnv) seed() {
	k.t.Helper()
	k.planAndApply(applySeed, false, nil)
}

func (k *applyEnv) internal(method, path string, body any) *apitest.Response {
	k.t.Helper()
	return k.e.Do(apitest.Request{Method: method, Path: path, Body: body, Secret: apitest.InternalToken})
}

// putPolicies replaces the environment's policies.
func (k *applyEnv) putPolicies(body string) {
	k.t.Helper()
	if r := k.internal("PUT", "/internal/v1/environments/"+k.e.EnvID+"/policies", body); r.Status != http.StatusOK {
		k.t.Fatalf("put policies: %d %s", r.Status, r.Body)
	}
}

// tokenIssued records that the application received a token at t.
func (k *applyEnv) tokenIssued(app string, at time.Time) {
	k.t.Helper()
	r := k.internal("POST", "/internal/v1/token-activity", map[string]any{
		"environment_id": k.e.EnvID, "application_key": app, "issued_at": at.UTC().Format(time.RFC3339Nano)})
	if r.Status != http.StatusNoContent {
		k.t.Fatalf("token activity: %d %s", r.Status, r.Body)
	}
}

func (k *applyEnv) get(path string) map[string]any {
	k.t.Helper()
	r := k.e.Do(apitest.Request{Method: "GET", Path: path})
	if r.Status != http.StatusOK {
		k.t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	return r.JSON()
}

// planStatus is the plan's status as GET shows it.
func (k *applyEnv) planStatus(id string) string {
	k.t.Helper()
	return k.get("/v1/config-plans/" + id)["status"].(string)
}

// planEvent is an entry of a plan's history.
type planEvent struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

func (k *applyEnv) events(id string) []planEvent {
	k.t.Helper()
	r := k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events?limit=100"})
	if r.Status != http.StatusOK {
		k.t.Fatalf("events of %s: %d %s", id, r.Status, r.Body)
	}
	var page struct {
		Data []planEvent `json:"data"`
	}
	r.Decode(k.t, &page)
	return page.Data
}

func eventTypes(evs []planEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// count counts the rows of a table of the test's database.
func (k *applyEnv) count(table, where string, args ...any) int64 {
	k.t.Helper()
	var n int64
	q := "SELECT count(*) FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	if err := k.e.DB.DB.Raw(q, args...).Scan(&n).Error; err != nil {
		k.t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func (k *applyEnv) exec(sql string, args ...any) {
	k.t.Helper()
	if err := k.e.DB.DB.Exec(sql, args...).Error; err != nil {
		k.t.Fatalf("exec %s: %v", sql, err)
	}
}

// applySnapshot is what a rejected apply must leave as it was.
type applySnapshot struct {
	// Export is the body of GET /v1/config, which is deterministic (sorted
	// members, canonical specs): compared as bytes, it stays cheap for
	// configurations of megabytes.
	Export    string
	Revisions int64
	Logs      int64
}

func (k *applyEnv) snapshot() applySnapshot {
	k.t.Helper()
	r := k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config"})
	if r.Status != http.StatusOK {
		k.t.Fatalf("export: %d %s", r.Status, r.Body)
	}
	return applySnapshot{Export: string(r.Body), Revisions: k.count("config_revisions", ""), Logs: k.count("management_logs", "")}
}

// assertUnchanged checks that the configuration, every version, the
// revisions and the management log are as they were.
func (k *applyEnv) assertUnchanged(before applySnapshot) {
	k.t.Helper()
	after := k.snapshot()
	if before.Export != after.Export {
		var b, a any
		_ = json.Unmarshal([]byte(before.Export), &b)
		_ = json.Unmarshal([]byte(after.Export), &a)
		k.t.Errorf("a rejected apply changed the configuration (-before +after):\n%s", cmp.Diff(b, a))
	}
	if before.Revisions != after.Revisions || before.Logs != after.Logs {
		k.t.Errorf("a rejected apply wrote revisions (%d → %d) or log entries (%d → %d)",
			before.Revisions, after.Revisions, before.Logs, after.Logs)
	}
}

// fieldProblem is the stable part of an errors[] entry.
type fieldProblem struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
}

// assertProblem checks the status, the code and every errors[] entry
// (pointer and code, in any order).
func assertProblem(t *testing.T, r *apitest.Response, status int, code string, want []fieldProblem) {
	t.Helper()
	if r.Status != status || r.Code() != code {
		t.Fatalf("got %d %q, want %d %q: %s", r.Status, r.Code(), status, code, r.Body)
	}
	var p struct {
		Errors []fieldProblem `json:"errors"`
	}
	r.Decode(t, &p)
	got := slices.Clone(p.Errors)
	sortProblems := func(ps []fieldProblem) {
		slices.SortFunc(ps, func(a, b fieldProblem) int { return strings.Compare(a.Pointer+" "+a.Code, b.Pointer+" "+b.Code) })
	}
	sortProblems(got)
	want = slices.Clone(want)
	if want == nil {
		want = []fieldProblem{}
	}
	sortProblems(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("errors[] (-want +got):\n%s\n%s", d, r.Body)
	}
}

// asJSON round-trips v through JSON, so that expected values compare with
// decoded ones.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// applyCall is the apply request of a table case.
type applyCall struct {
	plan   string // plan id (a plan of the environment unless the case says otherwise)
	body   any    // nil: no body
	secret string // "" all permissions, "-" none
}

// applyCase is one row of the §6 error table.
type applyCase struct {
	name string
	// setup seeds what the case needs and returns its request; the
	// environment holds applySeed already.
	setup  func(k *applyEnv) applyCall
	status int
	code   string
	errors []fieldProblem
	// extra are members beside code (plan_status, unconfirmed_deletions, …).
	extra map[string]any
	// planStatus is the plan's status afterwards ("" when there is no plan).
	planStatus string
	// events is the plan's whole history afterwards; eventCode, when set, is
	// the data.code of its last event.
	events    []string
	eventCode string
	// check makes further assertions.
	check func(k *applyEnv, r *apitest.Response)
}

var (
	created           = []string{"plan_created"}
	rejected          = []string{"plan_created", "apply_rejected"}
	rejectedInTx      = []string{"plan_created", "apply_started", "apply_rejected"}
	conflicted        = []string{"plan_created", "apply_started", "apply_conflicted"}
	appliedBefore     = []string{"plan_created", "apply_started", "apply_succeeded"}
	unknownPlanID     = "cfgp_01hzzzzzzzzzzzzzzzzzzzzzzz"
	acmeSecretPointer = "/resolved_secrets/" + acmeSecret
)

func applyErrorCases() []applyCase {
	return []applyCase{
		// Row 1.
		{name: "apply401MissingKey", status: 401, code: "unauthenticated", planStatus: "planned", events: created,
			setup: func(k *applyEnv) applyCall {
				return applyCall{plan: k.planID(envSettings("Renamed"), false), secret: "-"}
			}},
		{name: "apply401UnknownKey", status: 401, code: "unauthenticated", planStatus: "planned", events: created,
			setup: func(k *applyEnv) applyCall {
				unknown := plans.SecretPrefix + strings.Repeat("0", 26+26+32)
				return applyCall{plan: k.planID(envSettings("Renamed"), false), secret: unknown}
			}},
		{name: "apply401RevokedKey", status: 401, code: "unauthenticated", planStatus: "planned", events: created,
			setup: func(k *applyEnv) applyCall {
				ck, err := k.e.Domain.Keys.CreateKey(context.Background(), k.e.EnvID, config.AllPermissions())
				if err != nil {
					k.t.Fatal(err)
				}
				if err := k.e.Domain.Keys.RevokeKey(context.Background(), ck.ID); err != nil {
					k.t.Fatal(err)
				}
				return applyCall{plan: k.planID(envSettings("Renamed"), false), secret: ck.Secret}
			}},
		{name: "order401BeforeMalformedBody", status: 401, code: "unauthenticated", planStatus: "planned", events: created,
			setup: func(k *applyEnv) applyCall {
				return applyCall{plan: k.planID(envSettings("Renamed"), false), secret: "-", body: "{not json"}
			}},

		// Row 2.
		{name: "apply400Malformed", status: 400, code: "malformed_request", planStatus: "planned", events: created,
			setup: func(k *applyEnv) applyCall {
				return applyCall{plan: k.planID(envSettings("Renamed"), false), body: "{not json"}
			}},
		{name: "apply400WrongType", status: 400, code: "malformed_request", planStatus: "planned", events: created,
			errors: []fieldProblem{{"/confirm_deletions", "malformed_request"}, {"/sp_host", "malformed_request"}},
			setup: func(k *applyEnv) applyCall {
				return applyCall{plan: k.planID(envSettings("Renamed"), false),
					body: map[string]any{"confirm_deletions": "connection/github", "sp_host": 7}}
			}},
		{name: "apply400UnknownField", status: 400, code: "unknown_field", planStatus: "planned", events: created,
			errors: []fieldProblem{{"/secrets", "unknown_field"}},
			setup: func(k *applyEnv) applyCall {
				return applyCall{plan: k.planID(envSettings("Renamed"), false), body: map[string]any{"secrets": map[string]any{}}}
			}},
		{name: "order400BeforeNotFound", status: 400, code: "malformed_request",
			setup: func(k *applyEnv) applyCall { return applyCall{plan: unknownPlanID, body: "[1]"} }},

		// Row 4.
		{name: "apply404UnknownPlan", status: 404, code: "not_found",
			setup: func(k *applyEnv) applyCall { return applyCall{plan: unknownPlanID} }},
		{name: "apply404MalformedPlanID", status: 404, code: "not_found",
			setup: func(k *applyEnv) applyCall { return applyCall{plan: "cfgp_nope"} }},
		{name: "apply404OtherEnvironment", status: 404, code: "not_found", planStatus: "planned", events: created,
			setup: func(k *applyEnv) applyCall {
				ctx := context.Background()
				other, err := k.e.Domain.Environments.CreateEnvironment(ctx, "Other")
				if err != nil {
					k.t.Fatal(err)
				}
				ck, err := k.e.Domain.Keys.CreateKey(ctx, other.ID, config.AllPermissions())
				if err != nil {
					k.t.Fatal(err)
				}
				return applyCall{plan: k.planID(envSettings("Renamed"), false), secret: ck.Secret}
			}},
		{name: "order404BeforeForbidden", status: 404, code: "not_found",
			setup: func(k *applyEnv) applyCall { return applyCall{plan: unknownPlanID, secret: k.e.Key()} }},

		// Row 5.
		{name: "apply403ListsAllPermissions", status: 403, code: "insufficient_permissions", planStatus: "planned", events: created,
			extra: map[string]any{"required_permissions": []string{"apis:read", "config:write", "connections:read", "connections:write"}},
			setup: func(k *applyEnv) applyCall {
				// The api change is a no_op: it needs apis:read, not apis:write.
				id := k.planID(`{"connections": {"acme-sso": `+acmeInactive+`},
					"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
					"scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600}}}`, false)
				return applyCall{plan: id, secret: k.e.Key("config:write", "connections:read", "apis:write")}
			}},
		{name: "order403BeforeExpired", status: 403, code: "insufficient_permissions", planStatus: "expired", events: created,
			extra: map[string]any{"required_permissions": []string{"config:write", "environment-settings:read", "environment-settings:write"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(envSettings("Renamed"), false)
				k.e.Clock.Advance(25 * time.Hour)
				return applyCall{plan: id, secret: k.e.Key("config:write")}
			}},

		// Row 8.
		{name: "apply410Expired", status: 410, code: "config_plan_expired", planStatus: "expired",
			events: []string{"plan_created", "plan_expired"},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(envSettings("Renamed"), false)
				k.e.Clock.Advance(24*time.Hour + time.Second)
				return applyCall{plan: id}
			},
			check: func(k *applyEnv, r *apitest.Response) {
				// Applied again: 410 again, and no second plan_expired.
				id := strings.TrimSuffix(strings.TrimPrefix(k.lastPath, "/v1/config-plans/"), ":apply")
				assertProblem(k.t, k.apply(id, nil), 410, "config_plan_expired", nil)
				if got := eventTypes(k.events(id)); !slices.Equal(got, []string{"plan_created", "plan_expired"}) {
					k.t.Errorf("events after a second apply = %v", got)
				}
			}},
		{name: "order410BeforeBadBody", status: 410, code: "config_plan_expired", planStatus: "expired",
			events: []string{"plan_created", "plan_expired"},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(envSettings("Renamed"), false)
				k.e.Clock.Advance(25 * time.Hour)
				return applyCall{plan: id, body: map[string]any{"sp_host": "login.shop.example", "confirm_deletions": []any{"nope"}}}
			}},

		// Row 9.
		{name: "apply409NotApplicableApplied", status: 409, code: "config_plan_not_applicable", planStatus: "applied",
			extra: map[string]any{"plan_status": "applied"}, events: appliedBefore,
			setup: func(k *applyEnv) applyCall {
				return applyCall{plan: k.appliedPlan()}
			}},
		{name: "order409AppliedBeforeBadBody", status: 409, code: "config_plan_not_applicable", planStatus: "applied",
			extra: map[string]any{"plan_status": "applied"}, events: appliedBefore,
			setup: func(k *applyEnv) applyCall {
				return applyCall{plan: k.appliedPlan(), body: map[string]any{"resolved_secrets": map[string]any{"KEENAUTH_X": ""}}}
			}},
		{name: "order409AppliedPastItsValidity", status: 409, code: "config_plan_not_applicable", planStatus: "applied",
			extra: map[string]any{"plan_status": "applied"}, events: appliedBefore,
			setup: func(k *applyEnv) applyCall {
				id := k.appliedPlan()
				k.e.Clock.Advance(25 * time.Hour)
				return applyCall{plan: id}
			}},
		{name: "apply409NotApplicableConflicted", status: 409, code: "config_plan_not_applicable", planStatus: "conflicted",
			extra: map[string]any{"plan_status": "conflicted"}, events: conflicted, eventCode: "config_conflict",
			setup: func(k *applyEnv) applyCall {
				id := k.planID(envSettings("Shop A"), false)
				k.planAndApply(envSettings("Shop B"), false, nil)
				assertProblem(k.t, k.apply(id, nil), 409, "config_conflict",
					[]fieldProblem{{"/changes/0", "version_changed"}, {"/types/0", "type_changed"}})
				return applyCall{plan: id}
			}},

		// Row 10: every problem of the body at once.
		{name: "apply422ReportsEveryBodyProblem", status: 422, code: "validation_failed", planStatus: "planned",
			events: rejected, eventCode: "validation_failed",
			errors: []fieldProblem{
				{"/confirm_deletions/1", "duplicate"},
				{"/confirm_deletions/2", "not_a_deletion"},
				{"/confirm_deletions/3", "invalid"},
				{"/confirm_deletions/4", "invalid"},
				{"/confirm_deletions/5", "invalid"},
				{acmeSecretPointer, "secret_invalid"},
				{"/resolved_secrets/KEENAUTH_UNUSED", "secret_unused"},
				{"/resolved_secrets/bad-name", "invalid"},
				{"/resolved_secrets/KEENAUTH_lower", "invalid"},
				{"/sp_host", "invalid"},
			},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"connections": {"acme-sso": `+acmeInactive+`, "github": null}}`, false)
				return applyCall{plan: id, body: map[string]any{
					"resolved_secrets":  map[string]any{acmeSecret: "", "KEENAUTH_UNUSED": "x", "bad-name": "x", "KEENAUTH_lower": "x"},
					"sp_host":           "Login.Shop.Example",
					"confirm_deletions": []any{"connection/github", "connection/github", "api/orders", "nope", 5, "widget/github"},
				}}
			}},
		{name: "apply422SecretTooLongMissingAndNoHost", status: 422, code: "validation_failed", planStatus: "planned",
			events: rejected, eventCode: "validation_failed",
			errors: []fieldProblem{
				{acmeSecretPointer, "secret_invalid"},
				{"/resolved_secrets/KEENAUTH_CONNECTION_BETA_SSO_CLIENT_SECRET", "secret_missing"},
				{"/sp_host", "sp_host_required"},
			},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"connections": {"acme-sso": `+acmeInactive+`, "beta-sso": `+
					strings.Replace(acmeInactive, "ACME", "Beta", 1)+`}}`, false)
				return applyCall{plan: id, body: map[string]any{
					"resolved_secrets": map[string]any{acmeSecret: strings.Repeat("s", 8193)}}}
			}},
		{name: "apply422SecretNotAString", status: 422, code: "validation_failed", planStatus: "planned",
			events: rejected, eventCode: "validation_failed",
			errors: []fieldProblem{{acmeSecretPointer, "secret_invalid"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"connections": {"acme-sso": `+acmeInactive+`}}`, false)
				return applyCall{plan: id, body: map[string]any{
					"resolved_secrets": map[string]any{acmeSecret: 12345}, "sp_host": "login.shop.example"}}
			}},
		{name: "apply422HostAndSecretUnused", status: 422, code: "validation_failed", planStatus: "planned",
			events: rejected, eventCode: "validation_failed",
			errors: []fieldProblem{{"/resolved_secrets/KEENAUTH_X", "secret_unused"}, {"/sp_host", "sp_host_unused"}},
			setup: func(k *applyEnv) applyCall {
				return applyCall{plan: k.planID(envSettings("Renamed"), false),
					body: map[string]any{"resolved_secrets": map[string]any{"KEENAUTH_X": "v"}, "sp_host": "login.shop.example"}}
			}},
		{name: "apply422TooMany", status: 422, code: "validation_failed", planStatus: "planned",
			events: rejected, eventCode: "validation_failed",
			errors: []fieldProblem{{"/confirm_deletions", "too_many"}, {"/resolved_secrets", "too_many"}},
			setup: func(k *applyEnv) applyCall {
				secrets := map[string]any{}
				var confirms []any
				for i := range 5001 {
					secrets[fmt.Sprintf("KEENAUTH_S%d", i)] = "v"
					confirms = append(confirms, fmt.Sprintf("role/r%d", i))
				}
				return applyCall{plan: k.planID(envSettings("Renamed"), false),
					body: map[string]any{"resolved_secrets": secrets, "confirm_deletions": confirms}}
			}},
		{name: "order422BeforeDeletionNotConfirmed", status: 422, code: "validation_failed", planStatus: "planned",
			events: rejected, eventCode: "validation_failed",
			errors: []fieldProblem{{"/sp_host", "sp_host_unused"}},
			setup: func(k *applyEnv) applyCall {
				return applyCall{plan: k.planID(`{"connections": {"github": null}}`, false),
					body: map[string]any{"sp_host": "login.shop.example"}}
			}},

		// Row 11.
		{name: "apply409DeletionNotConfirmedConnection", status: 409, code: "deletion_not_confirmed", planStatus: "planned",
			extra: map[string]any{"unconfirmed_deletions": []string{"connection/github"}}, events: rejected, eventCode: "deletion_not_confirmed",
			setup: func(k *applyEnv) applyCall {
				// Confirming a deletion that needs none (the role) is allowed.
				id := k.planID(`{"connections": {"github": null}, "roles": {"reader": null}}`, false)
				return applyCall{plan: id, body: map[string]any{"confirm_deletions": []any{"role/reader"}}}
			}},
		{name: "apply409DeletionNotConfirmedApplicationWithRecentToken", status: 409, code: "deletion_not_confirmed",
			planStatus: "planned", events: rejected, eventCode: "deletion_not_confirmed",
			extra: map[string]any{"unconfirmed_deletions": []string{"application/portal"}},
			setup: func(k *applyEnv) applyCall {
				p := k.plan(`{"applications": {"portal": null}}`, false)
				if w := p["warnings"].([]any); len(w) != 0 {
					k.t.Fatalf("an application without tokens needs no confirmation at planning: %v", w)
				}
				// The apply decides from the state at apply time.
				k.tokenIssued("portal", k.e.Clock.Now().Add(-29*24*time.Hour))
				return applyCall{plan: p["id"].(string)}
			}},
		{name: "order409DeletionNotConfirmedBeforeNotImplemented", status: 409, code: "deletion_not_confirmed",
			planStatus: "planned", events: rejected, eventCode: "deletion_not_confirmed",
			extra: map[string]any{"unconfirmed_deletions": []string{"connection/github"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"connections": {"github": null, "gh-own": `+ownGitHub+`}}`, false)
				return applyCall{plan: id, body: map[string]any{"resolved_secrets": map[string]any{ownGitHubSecret: "s"}}}
			}},
		{name: "order409DeletionNotConfirmedBeforeConfigConflict", status: 409, code: "deletion_not_confirmed",
			planStatus: "planned", events: rejected, eventCode: "deletion_not_confirmed",
			extra: map[string]any{"unconfirmed_deletions": []string{"connection/github"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"connections": {"github": null}}`, false)
				k.planAndApply(`{"connections": {"db-main": `+databaseConnection("Main DB 2")+`}}`, false, nil)
				return applyCall{plan: id}
			}},

		// Row 12.
		{name: "apply501SocialClientSecret", status: 501, code: "not_implemented", planStatus: "planned",
			events: rejected, eventCode: "not_implemented",
			setup: func(k *applyEnv) applyCall {
				p := k.plan(`{"connections": {"gh-own": `+ownGitHub+`}}`, false)
				if got := p["required_secrets"].([]any); len(got) != 1 || got[0] != ownGitHubSecret {
					k.t.Fatalf("required_secrets = %v", got)
				}
				return applyCall{plan: p["id"].(string), body: map[string]any{"resolved_secrets": map[string]any{ownGitHubSecret: "s"}}}
			}},
		{name: "order501BeforeConfigConflict", status: 501, code: "not_implemented", planStatus: "planned",
			events: rejected, eventCode: "not_implemented",
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"connections": {"gh-own": `+ownGitHub+`}}`, false)
				k.planAndApply(`{"connections": {"corp": `+databaseConnection("Corp")+`}}`, false, nil)
				return applyCall{plan: id, body: map[string]any{"resolved_secrets": map[string]any{ownGitHubSecret: "s"}}}
			}},

		// Row 13.
		{name: "apply409ConfigConflictVersionChanged", status: 409, code: "config_conflict", planStatus: "conflicted",
			events: conflicted, eventCode: "config_conflict",
			errors: []fieldProblem{{"/changes/0", "version_changed"}, {"/types/0", "type_changed"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"connections": {"db-main": `+databaseConnection("Main DB 2")+`}}`, false)
				k.planAndApply(`{"connections": {"db-main": `+databaseConnection("Main DB 3")+`}}`, false, nil)
				return applyCall{plan: id}
			}},
		{name: "apply409ConfigConflictTypeChanged", status: 409, code: "config_conflict", planStatus: "conflicted",
			events: conflicted, eventCode: "config_conflict",
			errors: []fieldProblem{{"/types/0", "type_changed"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
					"scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 7200}}}`, false)
				k.planAndApply(`{"apis": {"extra": {"identifier": "https://api.shop.example/extra", "display_name": "Extra",
					"token_lifetime_seconds": 60}}}`, false, nil)
				return applyCall{plan: id}
			}},
		{name: "apply409ConfigConflictReferencingTypeChanged", status: 409, code: "config_conflict", planStatus: "conflicted",
			events: conflicted, eventCode: "config_conflict",
			errors: []fieldProblem{{"/referencing_types/0", "type_changed"}},
			setup: func(k *applyEnv) applyCall {
				p := k.plan(`{"connections": {"db-main": `+databaseConnection("Main DB")+`,
					"github": {"type": "social", "display_name": "GitHub", "active": true, "social": {"provider": "github", "use_own_credentials": false}},
					"corp": `+databaseConnection("Corp")+`}}`, true)
				if got := p["referencing_types"].([]any); len(got) != 1 || got[0] != "application" {
					k.t.Fatalf("referencing_types = %v", got)
				}
				k.planAndApply(`{"applications": {"portal": {"display_name": "Portal 2", "type": "regular_web",
					"callback_urls": ["https://portal.shop.example/callback"], "connections": ["db-main"],
					"api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}}}`, false, nil)
				return applyCall{plan: p["id"].(string)}
			}},
		{name: "apply409ConfigConflictReferencedConnectionDeleted", status: 409, code: "config_conflict", planStatus: "conflicted",
			events: conflicted, eventCode: "config_conflict",
			errors: []fieldProblem{{"/changes/0", "reference_broken"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"applications": {"shop": {"display_name": "Shop", "type": "spa", "connections": ["github"]}}}`, false)
				k.planAndApply(`{"connections": {"github": null}}`, false, map[string]any{"confirm_deletions": []any{"connection/github"}})
				return applyCall{plan: id}
			}},
		{name: "apply409ConfigConflictReferencedAPIDeleted", status: 409, code: "config_conflict", planStatus: "conflicted",
			events: conflicted, eventCode: "config_conflict",
			errors: []fieldProblem{{"/changes/0", "reference_broken"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"roles": {"biller": {"display_name": "Biller", "permissions": [{"api": "billing", "scope": "read:billing"}]}}}`, false)
				k.planAndApply(`{"apis": {"billing": null}}`, false, nil)
				return applyCall{plan: id}
			}},
		{name: "apply409ConfigConflictDeletedAPINowReferenced", status: 409, code: "config_conflict", planStatus: "conflicted",
			events: conflicted, eventCode: "config_conflict",
			errors: []fieldProblem{{"/changes/0", "reference_broken"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"apis": {"billing": null}}`, false)
				k.planAndApply(`{"applications": {"shop": {"display_name": "Shop", "type": "spa",
					"api_grants": [{"api": "billing", "scopes": ["read:billing"]}]}}}`, false, nil)
				return applyCall{plan: id}
			}},
		{name: "order409ConfigConflictBeforeDuplicate", status: 409, code: "config_conflict", planStatus: "conflicted",
			events: conflicted, eventCode: "config_conflict",
			errors: []fieldProblem{{"/changes/0", "version_changed"}, {"/types/0", "type_changed"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
					"scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600}},
					"connections": {"corp": `+databaseConnection("Main DB")+`}}`, false)
				k.planAndApply(`{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
					"scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 60}}}`, false, nil)
				return applyCall{plan: id}
			}},

		// Row 14.
		{name: "apply409ConflictDuplicateUniqueValue", status: 409, code: "conflict", planStatus: "planned",
			events: rejectedInTx, eventCode: "conflict",
			errors: []fieldProblem{{"/changes/0/spec/display_name", "duplicate"}},
			setup: func(k *applyEnv) applyCall {
				p := k.plan(`{"connections": {"corp": `+databaseConnection("Main DB")+`}}`, false)
				w := p["warnings"].([]any)
				if len(w) != 1 || w[0].(map[string]any)["code"] != "unique_value_in_use" ||
					w[0].(map[string]any)["pointer"] != "/changes/0/spec/display_name" {
					k.t.Fatalf("warnings = %v", w)
				}
				return applyCall{plan: p["id"].(string)}
			}},
		{name: "order409ConflictBeforeConnectionInUse", status: 409, code: "conflict", planStatus: "planned",
			events: rejectedInTx, eventCode: "conflict",
			errors: []fieldProblem{{"/changes/1/spec/display_name", "duplicate"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planUsedLater(`{"connections": {"db-main": null, "corp": ` + databaseConnection("GitHub") + `}}`)
				return applyCall{plan: id, body: map[string]any{"confirm_deletions": []any{"connection/db-main"}}}
			}},

		// Row 15.
		{name: "apply409ConnectionInUse", status: 409, code: "connection_in_use", planStatus: "planned",
			events: rejectedInTx, eventCode: "connection_in_use",
			errors: []fieldProblem{{"/changes/0", "in_use"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planUsedLater(`{"connections": {"db-main": null}}`)
				return applyCall{plan: id, body: map[string]any{"confirm_deletions": []any{"connection/db-main"}}}
			},
			check: func(k *applyEnv, r *apitest.Response) {
				if !strings.Contains(string(r.Body), "application/portal") {
					k.t.Errorf("the detail does not name the referrer: %s", r.Body)
				}
			}},
		{name: "order409InUseBeforeTestRequired", status: 409, code: "connection_in_use", planStatus: "planned",
			events: rejectedInTx, eventCode: "connection_in_use",
			errors: []fieldProblem{{"/changes/0", "in_use"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planUsedLater(`{"connections": {"db-main": null, "acme-sso": ` + acmeActive + `}}`)
				return applyCall{plan: id, body: map[string]any{"confirm_deletions": []any{"connection/db-main"},
					"resolved_secrets": map[string]any{acmeSecret: "s"}, "sp_host": "login.shop.example"}}
			}},

		// Row 16.
		{name: "apply409ConnectionTestRequired", status: 409, code: "connection_test_required", planStatus: "planned",
			events: rejectedInTx, eventCode: "connection_test_required",
			errors: []fieldProblem{{"/changes/0/spec", "test_required"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"connections": {"acme-sso": `+acmeActive+`}}`, false)
				return applyCall{plan: id, body: map[string]any{"resolved_secrets": map[string]any{acmeSecret: "s"}, "sp_host": "login.shop.example"}}
			},
			check: func(k *applyEnv, _ *apitest.Response) {
				if calls := k.e.Fed.Calls(); len(calls) != 0 {
					k.t.Errorf("the federation service was called: %+v", calls)
				}
			}},
		{name: "order409TestRequiredBeforePolicyConflict", status: 409, code: "connection_test_required", planStatus: "planned",
			events: rejectedInTx, eventCode: "connection_test_required",
			errors: []fieldProblem{{"/changes/0/spec", "test_required"}},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"connections": {"acme-sso": `+acmeActive+`, "gh2": {"type": "social", "display_name": "GH2",
					"active": true, "social": {"provider": "google", "use_own_credentials": false}}}}`, false)
				k.putPolicies(`{"forbid_social_connections": true}`)
				return applyCall{plan: id, body: map[string]any{"resolved_secrets": map[string]any{acmeSecret: "s"}, "sp_host": "login.shop.example"}}
			}},

		// Row 17.
		{name: "apply422PolicyConflict", status: 422, code: "policy_conflict", planStatus: "planned",
			events: rejectedInTx, eventCode: "policy_conflict",
			errors: []fieldProblem{
				{"/changes/0/spec/callback_urls/1", "require_https_callbacks"},
				{"/changes/1/spec/mfa", "mfa_required"},
				{"/changes/1/spec/password_policy/min_length", "min_password_length"},
			},
			setup: func(k *applyEnv) applyCall {
				id := k.planID(`{"applications": {"portal": {"display_name": "Portal", "type": "regular_web",
					"callback_urls": ["https://portal.shop.example/callback", "http://localhost:3000/callback"],
					"connections": ["db-main"], "api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}},
					"identity_settings": {"allowed_identifiers": ["email"], "mfa": "optional",
					"password_policy": {"min_length": 10, "require_digits": true, "require_symbols": false}}}`, false)
				k.putPolicies(`{"require_https_callbacks": true, "min_password_length": 12, "mfa_required": true}`)
				return applyCall{plan: id}
			}},
	}
}

// appliedPlan plans and applies a rename of the environment.
func (k *applyEnv) appliedPlan() string {
	k.t.Helper()
	id := k.planID(envSettings("Renamed"), false)
	k.mustApply(id, nil)
	return id
}

// TestApplyErrorTable runs the §6 error table through the real router and
// PostgreSQL: the answer, and that a rejected apply wrote nothing.
func TestApplyErrorTable(t *testing.T) {
	t.Parallel()
	for _, tc := range applyErrorCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := newApplyEnv(t, apitest.Options{})
			k.seed()
			call := tc.setup(k)
			before := k.snapshot()
			k.lastPath = "/v1/config-plans/" + call.plan + ":apply"
			r := k.e.Do(apitest.Request{Method: "POST", Path: k.lastPath, Body: call.body, Secret: call.secret})
			assertProblem(t, r, tc.status, tc.code, tc.errors)
			got := r.JSON()
			for name, want := range tc.extra {
				if d := cmp.Diff(asJSON(t, want), got[name]); d != "" {
					t.Errorf("%s (-want +got):\n%s", name, d)
				}
			}
			k.assertUnchanged(before)
			if tc.planStatus != "" {
				if s := k.planStatus(call.plan); s != tc.planStatus {
					t.Errorf("plan status = %q, want %q", s, tc.planStatus)
				}
				evs := k.events(call.plan)
				if got := eventTypes(evs); !slices.Equal(got, tc.events) {
					t.Errorf("events = %v, want %v", got, tc.events)
				} else if tc.eventCode != "" {
					if c := evs[len(evs)-1].Data["code"]; c != tc.eventCode {
						t.Errorf("data.code of %s = %v, want %s", evs[len(evs)-1].Type, c, tc.eventCode)
					}
				}
			}
			if tc.check != nil {
				tc.check(k, r)
			}
		})
	}
}

// TestApplyWritesChangesRevisionAndLog applies a plan of every action and
// checks what it wrote: the resources and their versions, one revision
// with the state before, one config.applied entry with the counts and one
// entry per changed resource, and the plan's history.
func TestApplyWritesChangesRevisionAndLog(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	seedCfg, _ := k.e.Export()
	logsBefore := k.count("management_logs", "")

	p := k.plan(`{
	  "connections": {"github": null, "corp": `+databaseConnection("Corp")+`},
	  "apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
	           "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 7200}},
	  "environment_settings": {"display_name": "Shop 2", "default_locale": "en", "session_lifetime_hours": 168},
	  "branding": {"primary_color": "#635bff"}}`, false)
	id := p["id"].(string)
	if d := cmp.Diff(map[string]any{"create": 1.0, "update": 2.0, "delete": 1.0, "no_op": 1.0}, p["summary"]); d != "" {
		t.Fatalf("summary (-want +got):\n%s", d)
	}
	r := k.apply(id, map[string]any{"confirm_deletions": []any{"connection/github"}})
	if r.Status != http.StatusOK {
		t.Fatalf("apply: %d %s", r.Status, r.Body)
	}
	res := r.JSON()
	revID, _ := res["revision_id"].(string)
	if res["status"] != "applied" || res["applied_at"] == nil || !config.ValidID(config.PrefixRevision, revID) {
		t.Fatalf("applied plan = %s", r.Body)
	}
	if d := cmp.Diff(k.get("/v1/config-plans/"+id), res); d != "" {
		t.Errorf("the answer is not the plan as GET shows it (-get +apply):\n%s", d)
	}
	// The created connection's id is shown once the plan is applied.
	var corpID string
	for _, c := range res["changes"].([]any) {
		c := c.(map[string]any)
		if c["kind"] == "connection" && c["key"] == "corp" {
			corpID, _ = c["resource_id"].(string)
		}
	}
	if !config.ValidID(config.PrefixConnection, corpID) {
		t.Errorf("resource_id of the created connection = %q, want a con_ id", corpID)
	}

	cfg, versions := k.e.Export()
	wantVersions := map[string]any{
		"api/billing": 1.0, "api/orders": 2.0, "application/portal": 1.0, "connection/corp": 1.0, "connection/db-main": 1.0,
		"role/reader": 1.0, "environment_settings/default": 2.0, "identity_settings/default": 1.0,
		"attack_protection/default": 1.0, "branding/default": 1.0,
	}
	if d := cmp.Diff(wantVersions, versions); d != "" {
		t.Errorf("versions (-want +got):\n%s", d)
	}
	if _, ok := cfg["connections"].(map[string]any)["github"]; ok {
		t.Errorf("github was not deleted: %v", cfg["connections"])
	}

	// The revision keeps the state before the apply.
	rev := k.get("/v1/config-revisions/" + revID)
	spec := func(docKey, key string) any { return seedCfg[docKey].(map[string]any)[key] }
	wantRev := map[string]any{
		"id": revID, "object": "config_revision", "plan_id": id,
		"types":  []any{"api", "branding", "connection", "environment_settings"},
		"counts": map[string]any{"created": 1.0, "updated": 2.0, "deleted": 1.0, "unchanged": 1.0},
		"resources": []any{
			map[string]any{"kind": "connection", "key": "github", "action": "delete", "version_before": 1.0, "spec_before": spec("connections", "github")},
			map[string]any{"kind": "api", "key": "orders", "action": "update", "version_before": 1.0, "spec_before": spec("apis", "orders")},
			map[string]any{"kind": "connection", "key": "corp", "action": "create", "version_before": nil, "spec_before": nil},
			map[string]any{"kind": "environment_settings", "key": "default", "action": "update", "version_before": 1.0,
				"spec_before": seedCfg["environment_settings"]},
		},
	}
	createdAt, _ := time.Parse(time.RFC3339, rev["created_at"].(string))
	expiresAt, _ := time.Parse(time.RFC3339, rev["expires_at"].(string))
	if got := expiresAt.Sub(createdAt); got != 90*24*time.Hour {
		t.Errorf("a revision lives %v, want 90 days", got)
	}
	delete(rev, "created_at")
	delete(rev, "expires_at")
	if d := cmp.Diff(wantRev, rev); d != "" {
		t.Errorf("revision (-want +got):\n%s", d)
	}
	if n := k.count("config_revisions", "plan_id = ?", id); n != 1 {
		t.Errorf("%d revisions of the plan, want 1", n)
	}

	// The management log: config.applied and one entry per changed resource.
	logs := k.get("/v1/management-logs?limit=100")["data"].([]any)
	if int64(len(logs)) != logsBefore+5 {
		t.Fatalf("%d log entries, want %d", len(logs), logsBefore+5)
	}
	keyID := k.get("/v1/config-plans/" + id)["created_by"]
	var got []any
	for _, l := range logs[:5] {
		l := l.(map[string]any)
		if l["plan_id"] != id || l["revision_id"] != revID || l["request_id"] != r.Header.Get("Request-Id") ||
			l["actor"].(map[string]any)["api_key_id"] != keyID || !strings.HasPrefix(l["id"].(string), "log_") {
			t.Errorf("log entry %v: wrong plan, revision, request or actor", l)
		}
		got = append(got, map[string]any{"type": l["type"], "data": l["data"]})
	}
	entry := func(typ, kind, key string, version float64) any {
		return map[string]any{"type": typ, "data": map[string]any{"kind": kind, "key": key, "version": version}}
	}
	want := []any{
		map[string]any{"type": "config.applied", "data": map[string]any{"created": 1.0, "updated": 2.0, "deleted": 1.0, "unchanged": 1.0,
			"approved_by": []any{}}},
		entry("connection.deleted", "connection", "github", 1),
		entry("api.updated", "api", "orders", 2),
		entry("connection.created", "connection", "corp", 1),
		entry("environment_settings.updated", "environment_settings", "default", 2),
	}
	sortByType := func(xs []any) {
		slices.SortFunc(xs, func(a, b any) int {
			return strings.Compare(fmt.Sprint(a.(map[string]any)["type"]), fmt.Sprint(b.(map[string]any)["type"]))
		})
	}
	sortByType(got)
	sortByType(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("log entries of the apply (-want +got):\n%s", d)
	}

	evs := k.events(id)
	if got := eventTypes(evs); !slices.Equal(got, []string{"plan_created", "apply_started", "apply_succeeded"}) {
		t.Errorf("events = %v", got)
	}
}

// TestApplyNoOpPlanWritesNoRevision applies the export planned again: no
// revision (a no-op must not push a useful one out of the 50) and a
// config.applied entry that counts only unchanged resources.
func TestApplyNoOpPlanWritesNoRevision(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	cfg, versions := k.e.Export()
	revs := k.count("config_revisions", "")
	p := k.e.Plan(cfg, false)
	id := p["id"].(string)
	res := k.mustApply(id, nil)
	if res["status"] != "applied" || res["revision_id"] != nil || res["applied_at"] == nil {
		t.Fatalf("applied no-op plan: status %v, revision_id %v, applied_at %v", res["status"], res["revision_id"], res["applied_at"])
	}
	if n := k.count("config_revisions", ""); n != revs {
		t.Errorf("%d revisions, want %d", n, revs)
	}
	logs := k.get("/v1/management-logs?limit=100")["data"].([]any)
	var mine []any
	for _, l := range logs {
		if l.(map[string]any)["plan_id"] == id {
			mine = append(mine, l)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("%d log entries of the no-op plan, want 1: %v", len(mine), mine)
	}
	l := mine[0].(map[string]any)
	want := map[string]any{"created": 0.0, "updated": 0.0, "deleted": 0.0, "unchanged": float64(len(versions)), "approved_by": []any{}}
	if l["type"] != "config.applied" || l["revision_id"] != nil || !cmp.Equal(want, l["data"]) {
		t.Errorf("log entry = %v, want config.applied with %v", l, want)
	}
	_, after := k.e.Export()
	if d := cmp.Diff(versions, after); d != "" {
		t.Errorf("a no-op plan changed versions:\n%s", d)
	}
	if got := eventTypes(k.events(id)); !slices.Equal(got, []string{"plan_created", "apply_started", "apply_succeeded"}) {
		t.Errorf("events = %v", got)
	}
}

// TestApplyDeletesAnApplicationWithoutRecentTokensUnconfirmed: an
// application whose last token is older than 30 days is deleted without a
// confirmation.
func TestApplyDeletesAnApplicationWithoutRecentTokensUnconfirmed(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	k.tokenIssued("portal", k.e.Clock.Now().Add(-31*24*time.Hour))
	p := k.plan(`{"applications": {"portal": null}}`, false)
	if w := p["warnings"].([]any); len(w) != 0 {
		t.Errorf("warnings = %v", w)
	}
	k.mustApply(p["id"].(string), nil)
	cfg, _ := k.e.Export()
	if apps := cfg["applications"].(map[string]any); len(apps) != 0 {
		t.Errorf("applications = %v", apps)
	}
}

// TestApplyValidateOnly runs every check and writes nothing: no revision,
// no log entry, no event, no version; a failing check answers its error and
// leaves the plan planned.
func TestApplyValidateOnly(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	id := k.planID(`{"connections": {"github": null, "corp": `+databaseConnection("Corp")+`}}`, false)
	validate := func(body any) *apitest.Response {
		return k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply?validate_only=true", Body: body})
	}
	before := k.snapshot()
	confirm := map[string]any{"confirm_deletions": []any{"connection/github"}}

	r := validate(confirm)
	if r.Status != http.StatusOK {
		t.Fatalf("validate_only: %d %s", r.Status, r.Body)
	}
	if d := cmp.Diff(k.get("/v1/config-plans/"+id), r.JSON()); d != "" {
		t.Errorf("validate_only answer is not the plan as GET shows it (-get +validate):\n%s", d)
	}
	if r.JSON()["status"] != "planned" {
		t.Errorf("status = %v", r.JSON()["status"])
	}
	// The checks before the transaction answer as the apply would, without
	// an event.
	assertProblem(t, validate(nil), 409, "deletion_not_confirmed", nil)
	assertProblem(t, validate(map[string]any{"confirm_deletions": []any{"connection/github"}, "sp_host": "a.example"}), 422,
		"validation_failed", []fieldProblem{{"/sp_host", "sp_host_unused"}})
	k.assertUnchanged(before)

	// A conflict found by validate_only leaves the plan planned.
	k.planAndApply(`{"connections": {"db-main": `+databaseConnection("Main DB 2")+`}}`, false, nil)
	before = k.snapshot()
	assertProblem(t, validate(confirm), 409, "config_conflict", []fieldProblem{{"/types/0", "type_changed"}})
	k.assertUnchanged(before)
	if s := k.planStatus(id); s != "planned" {
		t.Errorf("status after a validate_only conflict = %q, want planned", s)
	}
	if got := eventTypes(k.events(id)); !slices.Equal(got, []string{"plan_created"}) {
		t.Errorf("validate_only recorded events: %v", got)
	}
	// The real apply makes it conflicted.
	assertProblem(t, k.apply(id, confirm), 409, "config_conflict", []fieldProblem{{"/types/0", "type_changed"}})
	if s := k.planStatus(id); s != "conflicted" {
		t.Errorf("status = %q, want conflicted", s)
	}
	assertProblem(t, validate(confirm), 409, "config_plan_not_applicable", nil)
}

// TestApplyKeepsNothingWhenTheLastWriteFails makes the last resource write
// of a plan fail in PostgreSQL: the earlier deletion and updates are rolled
// back with it and the plan is planned again, applicable once the failure
// is gone.
func TestApplyKeepsNothingWhenTheLastWriteFails(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	if apitest.Embedded() {
		k.exec(`CREATE TRIGGER refuse_zz_last BEFORE INSERT ON resources FOR EACH ROW WHEN NEW.key = 'zz-last'
			BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)
	} else {
		k.exec(`CREATE FUNCTION refuse_zz_last() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.key = 'zz-last' THEN RAISE EXCEPTION 'refused by the test'; END IF;
			RETURN NEW;
		END $$`)
		k.exec(`CREATE TRIGGER refuse_zz_last BEFORE INSERT ON resources FOR EACH ROW EXECUTE FUNCTION refuse_zz_last()`)
	}
	p := k.plan(`{
	  "roles": {"reader": null},
	  "apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders",
	           "scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 7200}},
	  "environment_settings": {"display_name": "Shop 2", "default_locale": "en", "session_lifetime_hours": 168},
	  "applications": {"zz-last": {"display_name": "Last", "type": "spa"}}}`, false)
	id := p["id"].(string)
	// The creation is the last resource write (deletions and updates come first).
	if d := cmp.Diff(map[string]any{"create": 1.0, "update": 2.0, "delete": 1.0, "no_op": 0.0}, p["summary"]); d != "" {
		t.Fatalf("summary (-want +got):\n%s", d)
	}
	before := k.snapshot()

	// Called on the domain service: an unexpected database error is a 500,
	// which the API harness refuses by contract.
	a, err := k.e.Domain.Keys.Authenticate(context.Background(), k.e.Secret)
	if err != nil {
		t.Fatal(err)
	}
	a.RequestID = config.NewID(config.PrefixRequest)
	_, err = k.e.Domain.Plans.Apply(context.Background(), a, id, &plans.ApplyRequest{}, plans.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("apply error = %v, want the trigger's", err)
	}
	k.assertUnchanged(before)
	if s := k.planStatus(id); s != "planned" {
		t.Errorf("status = %q, want planned", s)
	}
	evs := k.events(id)
	if got := eventTypes(evs); !slices.Equal(got, rejectedInTx) {
		t.Errorf("events = %v", got)
	} else if evs[2].Data["code"] != "internal_error" {
		t.Errorf("apply_rejected data = %v", evs[2].Data)
	}

	if apitest.Embedded() {
		k.exec(`DROP TRIGGER refuse_zz_last`)
	} else {
		k.exec(`DROP TRIGGER refuse_zz_last ON resources`)
	}
	k.mustApply(id, nil)
	_, versions := k.e.Export()
	for ref, want := range map[string]any{"api/orders": 2.0, "environment_settings/default": 2.0, "application/zz-last": 1.0, "role/reader": nil} {
		if versions[ref] != want {
			t.Errorf("version of %s = %v, want %v", ref, versions[ref], want)
		}
	}
}

// TestApply503WhenSerializationFailuresPersist: a transaction that keeps
// failing to serialize is retried a bounded number of times, then answered
// as a temporarily unavailable directory, with nothing written.
func TestApply503WhenSerializationFailuresPersist(t *testing.T) {
	t.Parallel()
	var retries atomic.Int32
	k := newApplyEnv(t, apitest.Options{DB: configdb.Options{MaxTxAttempts: 3, OnTxRetry: func() { retries.Add(1) }}})
	k.e.RequirePostgres() // SQLite cannot be made to fail to serialize on demand
	k.seed()
	id := k.planID(envSettings("Renamed"), false)
	k.exec(`CREATE FUNCTION always_40001() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'forced' USING ERRCODE = '40001'; END $$`)
	k.exec(`CREATE TRIGGER always_40001 BEFORE INSERT ON management_logs FOR EACH ROW EXECUTE FUNCTION always_40001()`)
	before := k.snapshot()
	retries.Store(0)
	r := k.apply(id, nil)
	assertProblem(t, r, 503, "service_unavailable", nil)
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After")
	}
	if n := retries.Load(); n != 2 {
		t.Errorf("%d retries, want 2 (3 attempts)", n)
	}
	k.assertUnchanged(before)
	if s := k.planStatus(id); s != "planned" {
		t.Errorf("status = %q, want planned", s)
	}
}

// bigAPI is an api spec of about scopes×420 bytes.
func bigAPI(name string, scopes int) map[string]any {
	list := make([]any, scopes)
	desc, pad := strings.Repeat("d", 256), strings.Repeat("v", 121)
	for i := range list {
		list[i] = map[string]any{"value": fmt.Sprintf("s%06d", i) + pad, "description": desc}
	}
	return map[string]any{"identifier": "https://api.shop.example/" + name, "display_name": name,
		"scopes": list, "token_lifetime_seconds": 3600}
}

// TestApply413WhenTheRevisionIsTooLarge: changes whose revision would hold
// more than 10 MiB of former specs are refused with 413; the same updates of
// fewer resources fit. Since §13 a plan carries the old value of everything
// it replaces or removes, so it is at least as large as the former specs its
// revision would keep: such changes are refused when the plan is created
// (nothing is stored), before any apply could reach row 18, which stays as
// the apply's own guard.
func TestApply413WhenTheRevisionIsTooLarge(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	// Three APIs of ~3.7 MB each: each plan that creates one stays under the
	// plan limit (its revision holds no former spec).
	for i := range 3 {
		name := fmt.Sprintf("big-%d", i)
		k.mustApply(k.e.Plan(map[string]any{"apis": map[string]any{name: bigAPI(name, 8800)}}, false)["id"].(string), nil)
	}
	small := func(names ...string) map[string]any {
		apis := map[string]any{}
		for _, n := range names {
			apis[n] = map[string]any{"identifier": "https://api.shop.example/" + n, "display_name": n, "token_lifetime_seconds": 3600}
		}
		return map[string]any{"apis": apis, "identity_settings": map[string]any{"allowed_identifiers": []any{"email"}, "mfa": "optional",
			"password_policy": map[string]any{"min_length": 8, "require_digits": true, "require_symbols": false}}}
	}
	before := k.snapshot()
	r := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": small("big-0", "big-1", "big-2")}})
	assertProblem(t, r, 413, "config_document_too_large", nil)
	k.assertUnchanged(before)

	// Two of the three fit in one plan and one revision.
	res := k.mustApply(k.e.Plan(small("big-0", "big-1"), false)["id"].(string), nil)
	if res["revision_id"] == nil {
		t.Errorf("no revision: %v", res["revision_id"])
	}
}

// TestApplyActivatesAnEnterpriseConnectionAfterASuccessfulTest: row 16
// refuses the activation while the connection's material has no successful
// test, allows it after one, and refuses again once the material changes.
func TestApplyActivatesAnEnterpriseConnectionAfterASuccessfulTest(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	secrets := map[string]any{"resolved_secrets": map[string]any{acmeSecret: "s3cret"}, "sp_host": "login.shop.example"}
	res := k.planAndApply(`{"connections": {"acme-sso": `+acmeInactive+`}}`, false, secrets)
	conID, _ := res["changes"].([]any)[0].(map[string]any)["resource_id"].(string)
	if !config.ValidID(config.PrefixConnection, conID) {
		t.Fatalf("resource_id = %q", conID)
	}
	testConnection := func(want string) {
		t.Helper()
		r := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/connections/acme-sso:test"})
		if r.Status != http.StatusOK || r.JSON()["status"] != want {
			t.Fatalf("connection test: %d %s, want %s", r.Status, r.Body, want)
		}
	}
	activate := k.planID(`{"connections": {"acme-sso": `+acmeActive+`}}`, false)

	k.e.Fed.TestResult(k.e.EnvID, conID, false, "the issuer does not answer")
	testConnection("failed")
	assertProblem(t, k.apply(activate, nil), 409, "connection_test_required", []fieldProblem{{"/changes/0/spec", "test_required"}})

	k.e.Fed.TestResult(k.e.EnvID, conID, true, "")
	testConnection("succeeded")
	if r := k.mustApply(activate, nil); r["status"] != "applied" {
		t.Fatalf("activation: %v", r["status"])
	}

	// Row 16 names creations and activations: new material for a connection
	// that is already active is written, and makes its test stale.
	changed := strings.Replace(acmeActive, `"client_id": "abc"`, `"client_id": "xyz"`, 1)
	k.mustApply(k.planID(`{"connections": {"acme-sso": `+changed+`}}`, false), secrets)

	// Deactivated, the connection cannot be activated again on the stale test.
	k.mustApply(k.planID(`{"connections": {"acme-sso": `+strings.Replace(acmeInactive, `"client_id": "abc"`, `"client_id": "xyz"`, 1)+`}}`, false), nil)
	id := k.planID(`{"connections": {"acme-sso": `+changed+`}}`, false)
	before := k.snapshot()
	assertProblem(t, k.apply(id, nil), 409, "connection_test_required", []fieldProblem{{"/changes/0/spec", "test_required"}})
	k.assertUnchanged(before)
}
