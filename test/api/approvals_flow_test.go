package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// apiDoc is a document that creates (or updates) the API name.
func apiDoc(name string, lifetime int) map[string]any {
	return map[string]any{"apis": map[string]any{name: map[string]any{"display_name": "Orders", "identifier": "https://api.shop.example/" + name,
		"token_lifetime_seconds": lifetime}}}
}

// createPlanAs creates a plan of doc with secret and fails t unless 201.
func createPlanAs(t *testing.T, e *apitest.Env, secret string, doc map[string]any) string {
	t.Helper()
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Secret: secret, Body: map[string]any{"config": doc}})
	if r.Status != http.StatusCreated {
		t.Fatalf("create plan: %d %s", r.Status, r.Body)
	}
	return r.JSON()["id"].(string)
}

func review(e *apitest.Env, secret, id, verb string, body any) *apitest.Response {
	return e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":" + verb, Secret: secret, Body: body})
}

func pointers(r *apitest.Response) []string {
	out := []string{}
	errs, _ := r.JSON()["errors"].([]any)
	for _, fe := range errs {
		out = append(out, fe.(map[string]any)["pointer"].(string))
	}
	return out
}

// TestApproveAndRejectAnswerInTheirOrder (§17): every answer of :approve
// and :reject, each the first that applies, and a refused request changes
// nothing.
func TestApproveAndRejectAnswerInTheirOrder(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	_, ana := ownedKey(t, e, "ana@shop.example", config.PermConfigRead, config.PermConfigWrite, "apis:read", "apis:write", config.PermConfigApprove)
	_, ana2 := ownedKey(t, e, "ana@shop.example", config.PermConfigApprove, "apis:read")
	bobID, bob := ownedKey(t, e, "bob@shop.example", config.PermConfigApprove, "apis:read")
	noRead := e.Key(config.PermConfigApprove, config.PermConfigRead)
	noApprove := e.Key(config.PermConfigRead, "apis:read", config.PermConfigWrite)

	planned := createPlanAs(t, e, ana, apiDoc("orders", 60))
	expired := createPlanAs(t, e, ana, apiDoc("users", 60))
	applied := createPlanAs(t, e, ana, apiDoc("billing", 60))
	e.Apply(applied, nil)
	// One plan past its validity (its stored expiry moved back).
	e.GormDB().Exec("UPDATE config_plans SET expires_at = ? WHERE id = ?", time.Now().Add(-time.Minute), expired)

	long := strings.Repeat("é", 1001)
	cases := []struct {
		name, verb, secret, id string
		body                   any
		status                 int
		code                   string
		pointer                string
	}{
		{"no key", "approve", "-", planned, nil, 401, "unauthenticated", ""},
		{"not JSON", "approve", bob, planned, "{", 400, "malformed_request", ""},
		{"unknown field", "approve", bob, planned, map[string]any{"comment": "ok", "extra": 1}, 400, "unknown_field", "/extra"},
		{"comment not a string", "approve", bob, planned, map[string]any{"comment": 3}, 400, "malformed_request", "/comment"},
		{"comment too long", "approve", bob, planned, map[string]any{"comment": long}, 400, "malformed_request", "/comment"},
		{"comment with a newline", "approve", bob, planned, map[string]any{"comment": "looks\ngood"}, 400, "malformed_request", "/comment"},
		{"comment with a control character", "reject", bob, planned, map[string]any{"comment": "no\u0007"}, 400, "malformed_request", "/comment"},
		{"rejection without comment", "reject", bob, planned, nil, 400, "malformed_request", "/comment"},
		{"rejection with an empty comment", "reject", bob, planned, map[string]any{"comment": ""}, 400, "malformed_request", "/comment"},
		{"rejection with a comment too long", "reject", bob, planned, map[string]any{"comment": long}, 400, "malformed_request", "/comment"},
		{"bad body before unknown plan", "approve", bob, "cfgp_01m4qpqtywfs7930tb6kqn5rc5", "[]", 400, "malformed_request", ""},
		{"unknown plan", "approve", bob, "cfgp_01m4qpqtywfs7930tb6kqn5rc5", nil, 404, "not_found", ""},
		{"malformed plan id", "reject", bob, "nope", map[string]any{"comment": "no"}, 404, "not_found", ""},
		{"without the plan's read permission", "approve", noRead, planned, nil, 403, "insufficient_permissions", ""},
		{"without config:approve", "approve", noApprove, planned, nil, 403, "insufficient_permissions", ""},
		{"rejection without config:approve", "reject", noApprove, planned, map[string]any{"comment": "no"}, 403, "insufficient_permissions", ""},
		{"forbidden before expired", "approve", noApprove, expired, nil, 403, "insufficient_permissions", ""},
		{"expired", "approve", bob, expired, nil, 410, "config_plan_expired", ""},
		{"expired rejection", "reject", bob, expired, map[string]any{"comment": "no"}, 410, "config_plan_expired", ""},
		{"applied", "approve", bob, applied, nil, 409, "config_plan_not_applicable", ""},
		{"applied rejection", "reject", bob, applied, map[string]any{"comment": "no"}, 409, "config_plan_not_applicable", ""},
		{"not applicable before self-approval", "approve", ana, applied, nil, 409, "config_plan_not_applicable", ""},
		{"self-approval by the creating key", "approve", ana, planned, nil, 403, "self_approval_forbidden", ""},
		{"self-approval by a key of the same owner", "approve", ana2, planned, map[string]any{"comment": "lgtm"}, 403, "self_approval_forbidden", ""},
	}
	for _, tc := range cases {
		r := review(e, tc.secret, tc.id, tc.verb, tc.body)
		if r.Status != tc.status || r.Code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Body, tc.status, tc.code)
			continue
		}
		if tc.pointer != "" && !slices.Contains(pointers(r), tc.pointer) {
			t.Errorf("%s: pointers %v, want %s", tc.name, pointers(r), tc.pointer)
		}
		if tc.code == "insufficient_permissions" {
			if got := toStrings(r.JSON()["required_permissions"]); !slices.Equal(got, []string{"apis:read", config.PermConfigApprove}) {
				t.Errorf("%s: required_permissions %v", tc.name, got)
			}
		}
		if tc.code == "config_plan_not_applicable" && r.JSON()["plan_status"] != "applied" {
			t.Errorf("%s: plan_status %v", tc.name, r.JSON()["plan_status"])
		}
	}
	got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + planned}).JSON()
	if got["status"] != "planned" || len(got["approvals"].([]any)) != 0 || got["rejection"] != nil {
		t.Fatalf("refused reviews changed the plan: %v %v %v", got["status"], got["approvals"], got["rejection"])
	}

	// An approval: 200 the plan; the same key again changes nothing; an
	// Idempotency-Key is accepted and ignored.
	r := review(e, bob, planned, "approve", map[string]any{"comment": "Looks right ✓"})
	if r.Status != 200 {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	first := r.JSON()["approvals"].([]any)
	if len(first) != 1 || first[0].(map[string]any)["api_key_id"] != bobID || first[0].(map[string]any)["owner"] != "bob@shop.example" ||
		first[0].(map[string]any)["comment"] != "Looks right ✓" {
		t.Fatalf("approvals after approving: %v", first)
	}
	for i := range 3 {
		r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + planned + ":approve", Secret: bob,
			Header: map[string]string{"Idempotency-Key": fmt.Sprintf("again-%d", i%2)}})
		if r.Status != 200 || fmt.Sprint(r.JSON()["approvals"]) != fmt.Sprint(first) {
			t.Fatalf("a second approval by the same key: %d %s", r.Status, r.Body)
		}
	}
	var events struct{ Data []map[string]any }
	e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + planned + "/events"}).Decode(t, &events)
	var approvedEvents []map[string]any
	for _, ev := range events.Data {
		if ev["type"] == "plan_approved" {
			approvedEvents = append(approvedEvents, ev)
		}
	}
	if len(approvedEvents) != 1 || approvedEvents[0]["data"].(map[string]any)["comment"] != "Looks right ✓" ||
		approvedEvents[0]["actor"].(map[string]any)["owner"] != "bob@shop.example" {
		t.Fatalf("plan_approved events: %v", approvedEvents)
	}
}

// TestRejectionIsFinal (§17): a rejection by a key with config:approve, or
// the withdrawal by the creating key, makes the plan rejected, after which
// approve, apply and rebase answer 409 config_plan_not_applicable.
func TestRejectionIsFinal(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	creatorID, creator := ownedKey(t, e, "ana@shop.example", config.PermConfigRead, config.PermConfigWrite, "apis:read", "apis:write")
	bobID, bob := ownedKey(t, e, "bob@shop.example", config.PermConfigApprove, "apis:read")
	for _, tc := range []struct {
		name, secret, keyID string
		owner               string
	}{{"rejection", bob, bobID, "bob@shop.example"}, {"withdrawal", creator, creatorID, "ana@shop.example"}} {
		id := createPlanAs(t, e, creator, apiDoc("orders", 60))
		if tc.name == "rejection" {
			if r := review(e, bob, id, "approve", nil); r.Status != 200 {
				t.Fatalf("approve: %d %s", r.Status, r.Body)
			}
		}
		r := review(e, tc.secret, id, "reject", map[string]any{"comment": "Not this week."})
		if r.Status != 200 || r.JSON()["status"] != "rejected" {
			t.Fatalf("%s: %d %s", tc.name, r.Status, r.Body)
		}
		rej, _ := r.JSON()["rejection"].(map[string]any)
		if rej["api_key_id"] != tc.keyID || rej["owner"] != tc.owner || rej["comment"] != "Not this week." || rej["rejected_at"] == nil {
			t.Errorf("%s: rejection %v", tc.name, rej)
		}
		for _, verb := range []string{"approve", "apply", "rebase", "reject"} {
			var body any
			if verb == "reject" {
				body = map[string]any{"comment": "again"}
			}
			r := review(e, bob, id, verb, body)
			if verb != "approve" && verb != "reject" {
				r = review(e, "", id, verb, body)
			}
			if r.Status != 409 || r.Code() != "config_plan_not_applicable" || r.JSON()["plan_status"] != "rejected" {
				t.Errorf("%s, then %s: %d %s", tc.name, verb, r.Status, r.Body)
			}
		}
		var events struct{ Data []map[string]any }
		e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events"}).Decode(t, &events)
		last := events.Data[len(events.Data)-1]
		if last["type"] != "plan_rejected" || last["data"].(map[string]any)["comment"] != "Not this week." {
			t.Errorf("%s: last event %v", tc.name, last)
		}
		if list := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans?status=rejected"}).JSON()["data"].([]any); len(list) == 0 ||
			list[0].(map[string]any)["id"] != id {
			t.Errorf("%s: the rejected plan is not listed by status: %v", tc.name, list)
		}
	}
}

// TestApplyNeedsTheApprovalsOfTwoPeople (§17): under required_approvals 2
// the apply answers 409 approval_required (after row 9, before row 10)
// until two different owners approved (two keys of one owner count once);
// nothing is written meanwhile; validate_only skips the row; config.applied
// lists the approvals counted; a no-op plan needs none; a rebase has none.
func TestApplyNeedsTheApprovalsOfTwoPeople(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	putApprovalPolicy(t, e, 2)
	creator := e.Key(config.AllPermissions()...)
	bob1ID, bob1 := ownedKey(t, e, "bob@shop.example", config.PermConfigApprove, "apis:read")
	bob2ID, bob2 := ownedKey(t, e, "bob@shop.example", config.PermConfigApprove, "apis:read")
	carolID, carol := ownedKey(t, e, "carol@shop.example", config.PermConfigApprove, "apis:read")

	id := createPlanAs(t, e, creator, apiDoc("orders", 60))
	if got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id}).JSON(); got["approvals_required"] != float64(2) {
		t.Fatalf("approvals_required %v", got["approvals_required"])
	}
	before, _ := e.Export()
	refused := func(step string, received int, body any) {
		t.Helper()
		r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Secret: creator, Body: body})
		if r.Status != 409 || r.Code() != "approval_required" || r.JSON()["approvals_required"] != float64(2) ||
			r.JSON()["approvals_received"] != float64(received) {
			t.Fatalf("%s: %d %s", step, r.Status, r.Body)
		}
		if got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id}).JSON(); got["status"] != "planned" {
			t.Fatalf("%s: the plan is %v", step, got["status"])
		}
		if after, _ := e.Export(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("%s: the configuration changed", step)
		}
	}
	refused("no approval", 0, nil)
	// Row 10 comes after: a body that would be 422 is answered 409.
	refused("no approval, bad body", 0, map[string]any{"resolved_secrets": map[string]any{"KEENAUTH_UNUSED": "x"}})
	// validate_only skips the row.
	if r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply?validate_only=true", Secret: creator}); r.Status != 200 {
		t.Fatalf("validate_only without approvals: %d %s", r.Status, r.Body)
	}
	review(e, bob1, id, "approve", nil)
	review(e, bob2, id, "approve", map[string]any{"comment": "me again"})
	refused("two keys of one owner", 1, nil)
	if r := review(e, carol, id, "approve", nil); r.Status != 200 || len(r.JSON()["approvals"].([]any)) != 3 {
		t.Fatalf("carol approves: %d %s", r.Status, r.Body)
	}
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Secret: creator})
	if r.Status != 200 || r.JSON()["status"] != "applied" {
		t.Fatalf("apply after two owners approved: %d %s", r.Status, r.Body)
	}
	var logs struct{ Data []map[string]any }
	e.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs?type=config.applied"}).Decode(t, &logs)
	by := fmt.Sprint(logs.Data[0]["data"].(map[string]any)["approved_by"])
	for _, want := range []string{bob1ID, bob2ID, carolID, "bob@shop.example", "carol@shop.example"} {
		if !strings.Contains(by, want) {
			t.Errorf("approved_by %s lacks %s", by, want)
		}
	}

	// A plan whose every change is a no_op needs no approval; approved_by
	// is then [].
	noop := createPlanAs(t, e, creator, apiDoc("orders", 60))
	if got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + noop}).JSON(); got["approvals_required"] != float64(0) {
		t.Fatalf("no-op plan: approvals_required %v", got["approvals_required"])
	}
	e.Apply(noop, nil)
	e.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs?type=config.applied"}).Decode(t, &logs)
	if by, ok := logs.Data[0]["data"].(map[string]any)["approved_by"].([]any); !ok || len(by) != 0 {
		t.Errorf("no-op apply: approved_by %v", logs.Data[0]["data"])
	}

	// A rebase makes a plan with no approvals.
	src := createPlanAs(t, e, creator, apiDoc("orders", 120))
	review(e, bob1, src, "approve", nil)
	review(e, carol, src, "approve", nil)
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + src + ":rebase", Secret: creator})
	if r.Status != 201 || len(r.JSON()["approvals"].([]any)) != 0 || r.JSON()["approvals_required"] != float64(2) {
		t.Fatalf("rebase: %d %s", r.Status, r.Body)
	}
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + r.JSON()["id"].(string) + ":apply", Secret: creator})
	if r.Status != 409 || r.Code() != "approval_required" || r.JSON()["approvals_received"] != float64(0) {
		t.Fatalf("apply of the rebased plan: %d %s", r.Status, r.Body)
	}
}
