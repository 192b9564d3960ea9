package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// envEvents reads every plan event of the environment, oldest first.
func envEvents(t *testing.T, e *apitest.Env) []configdb.PlanEventRow {
	t.Helper()
	var evs []configdb.PlanEventRow
	if err := e.GormDB().Where("environment_id = ?", e.EnvID).Order("created_at, id").Find(&evs).Error; err != nil {
		t.Fatalf("read events: %v", err)
	}
	return evs
}

// TestBuildMessagesShowsThePlanAsItWasAtTheEvent (§19): a message for every
// plan event but apply_started, with the plan's status, approvals and
// revision as the event left them (not as they are now), the actor's
// owner, the refusal's code, and never a spec or a diff.
func TestBuildMessagesShowsThePlanAsItWasAtTheEvent(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	putApprovalPolicy(t, e, 1)
	anaID, ana := ownedKey(t, e, "ana@shop.example", config.PermConfigRead, config.PermConfigWrite, "apis:read", "apis:write")
	bobID, bob := ownedKey(t, e, "bob@shop.example", config.PermConfigApprove, "apis:read")

	applied := createPlanAs(t, e, ana, apiDoc("orders", 60))
	stale := createPlanAs(t, e, ana, apiDoc("orders", 90))
	if r := review(e, bob, applied, "approve", map[string]any{"comment": "ok"}); r.Status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	if r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + applied + ":apply", Secret: ana,
		Body: map[string]any{"confirm_deletions": []string{"api/nothing"}}}); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("apply with a wrong confirmation: %d %s", r.Status, r.Body)
	}
	revisionID := e.Apply(applied, nil)["revision_id"].(string)
	if r := review(e, bob, stale, "approve", nil); r.Status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	if r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + stale + ":apply", Secret: ana}); r.Status != http.StatusConflict {
		t.Fatalf("apply of a stale plan: %d %s", r.Status, r.Body)
	}
	if r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + stale + ":rebase", Secret: ana}); r.Status != http.StatusCreated {
		t.Fatalf("rebase: %d %s", r.Status, r.Body)
	}
	withdrawn := createPlanAs(t, e, ana, apiDoc("users", 60))
	if r := review(e, ana, withdrawn, "reject", map[string]any{"comment": "not now"}); r.Status != http.StatusOK {
		t.Fatalf("reject: %d %s", r.Status, r.Body)
	}

	evs := envEvents(t, e)
	msgs, err := plans.BuildMessages(context.Background(), configdb.New(e.GormDB(), nil, configdb.Options{}).Reader, e.EnvID, evs)
	if err != nil {
		t.Fatalf("BuildMessages: %v", err)
	}
	type seen struct {
		Plan, Type, Status string
		Received           int
		Revision           string
		Actor, Code        string
	}
	var got []seen
	name := map[string]string{applied: "applied", stale: "stale", withdrawn: "withdrawn"}
	who := map[string]string{anaID: "ana", bobID: "bob"}
	for i, m := range msgs {
		owner := map[string]string{anaID: "ana@shop.example", bobID: "bob@shop.example"}[m.Data.Actor.APIKeyID]
		if got := m.Data.Actor.Owner; (owner == "") != (got == nil) || (got != nil && *got != owner) {
			t.Errorf("message %d: actor %+v, want owner %q", i, m.Data.Actor, owner)
		}
		if m.ID != m.Data.EventID || m.Data.EnvironmentID != e.EnvID || m.Data.Plan.ID != m.Data.PlanID || m.Data.Plan.CreatedBy != anaID ||
			m.Data.Plan.CreatedByOwner == nil || *m.Data.Plan.CreatedByOwner != "ana@shop.example" || m.Data.Plan.ApprovalsRequired != 1 {
			t.Errorf("message %d: %+v", i, m)
		}
		s := seen{Plan: name[m.Data.PlanID], Type: m.Type, Status: string(m.Data.Plan.Status), Received: m.Data.Plan.ApprovalsReceived,
			Actor: who[m.Data.Actor.APIKeyID]}
		if s.Plan == "" {
			s.Plan = "rebased"
		}
		if m.Data.Plan.RevisionID != nil {
			s.Revision = *m.Data.Plan.RevisionID
		}
		if m.Data.Code != nil {
			s.Code = *m.Data.Code
		}
		got = append(got, s)
		body, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, banned := range []string{`"changes"`, `"spec"`, `"diff"`, "api.shop.example"} {
			if strings.Contains(string(body), banned) {
				t.Errorf("message %d holds %s: %s", i, banned, body)
			}
		}
	}
	want := []seen{
		{"applied", "plan.created", "planned", 0, "", "ana", ""},
		{"stale", "plan.created", "planned", 0, "", "ana", ""},
		{"applied", "plan.approved", "planned", 1, "", "bob", ""},
		{"applied", "plan.apply_rejected", "planned", 1, "", "ana", "validation_failed"},
		{"applied", "plan.applied", "applied", 1, revisionID, "", ""},
		{"stale", "plan.approved", "planned", 1, "", "bob", ""},
		{"stale", "plan.conflicted", "conflicted", 1, "", "ana", ""},
		{"rebased", "plan.created", "planned", 0, "", "ana", ""},
		{"stale", "plan.rebased", "conflicted", 1, "", "ana", ""},
		{"withdrawn", "plan.created", "planned", 0, "", "ana", ""},
		{"withdrawn", "plan.rejected", "rejected", 0, "", "ana", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// TestBuildMessagesCountTheApprovalsARuleAsked (§18, §19): a message's
// approvals_required is the plan's own — the largest of the policy's
// required_approvals and the approvals its rule_approval warnings asked.
func TestBuildMessagesCountTheApprovalsARuleAsked(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	setPolicies(t, e, `{"required_approvals": 1, "rules": [{"name": "api-change", "when": "change.kind == 'api'",
		"enforcement": "approval", "approvals": 3, "message": "An api change needs three approvals."}]}`)
	_, ana := ownedKey(t, e, "ana@shop.example", config.PermConfigRead, config.PermConfigWrite, "apis:read", "apis:write")
	planID := createPlanAs(t, e, ana, apiDoc("orders", 60))
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + planID, Secret: ana})
	var plan struct {
		ApprovalsRequired int `json:"approvals_required"`
	}
	if err := json.Unmarshal(r.Body, &plan); err != nil || plan.ApprovalsRequired != 3 {
		t.Fatalf("the plan: %d %s", r.Status, r.Body)
	}
	msgs, err := plans.BuildMessages(context.Background(), configdb.New(e.GormDB(), nil, configdb.Options{}).Reader, e.EnvID, envEvents(t, e))
	if err != nil {
		t.Fatalf("BuildMessages: %v", err)
	}
	if len(msgs) != 1 || msgs[0].Type != "plan.created" || msgs[0].Data.Plan.ApprovalsRequired != 3 {
		t.Fatalf("messages: %+v", msgs)
	}
}
