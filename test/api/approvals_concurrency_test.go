package api_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// TestApprovalsRacingAppliesAcrossReplicas (§17): approvals, repeated
// approvals and applies of one plan fired at once over two replicas. An
// apply succeeds only with the approvals of two owners, each key counted
// once; every refused apply says so with fewer than two received; and a
// rejection racing applies leaves the plan either applied or rejected,
// never both.
func TestApprovalsRacingAppliesAcrossReplicas(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	replica := apitest.Setup(t, apitest.Options{Replica: e})
	putApprovalPolicy(t, e, 2)
	creator := e.Key(config.AllPermissions()...)
	perms := []string{config.PermConfigApprove, "apis:read"}
	_, a1 := ownedKey(t, e, "ana@shop.example", perms...)
	_, a2 := ownedKey(t, e, "ana@shop.example", perms...)
	_, b1 := ownedKey(t, e, "bob@shop.example", perms...)

	fire := func(reqs []apitest.Request) []*apitest.Response {
		out := make([]*apitest.Response, len(reqs))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, r := range reqs {
			on := e
			if i%2 == 1 {
				on = replica
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				out[i] = on.Do(r)
			}()
		}
		close(start)
		wg.Wait()
		return out
	}

	for round := range 4 {
		id := createPlanAs(t, e, creator, apiDoc("orders", 60+round))
		path := "/v1/config-plans/" + id
		var reqs []apitest.Request
		for _, k := range []string{a1, a2, a1, b1, a2, b1} {
			reqs = append(reqs, apitest.Request{Method: "POST", Path: path + ":approve", Secret: k})
			reqs = append(reqs, apitest.Request{Method: "POST", Path: path + ":apply", Secret: creator})
		}
		applied := 0
		for i, r := range fire(reqs) {
			switch {
			case r.Status == http.StatusOK && i%2 == 0:
			case r.Status == http.StatusOK:
				applied++
			case r.Status == http.StatusConflict && r.Code() == "approval_required":
				if r.JSON()["approvals_received"].(float64) >= 2 {
					t.Errorf("round %d: refused with %v received", round, r.JSON()["approvals_received"])
				}
			case r.Status == http.StatusConflict && r.Code() == "config_plan_not_applicable":
			default:
				t.Errorf("round %d: answer %d %s", round, r.Status, r.Body)
			}
		}
		got := e.Do(apitest.Request{Method: "GET", Path: path}).JSON()
		approvals := got["approvals"].([]any)
		seen := map[any]bool{}
		for _, a := range approvals {
			k := a.(map[string]any)["api_key_id"]
			if seen[k] {
				t.Errorf("round %d: key %v approved twice: %v", round, k, approvals)
			}
			seen[k] = true
		}
		if applied > 1 {
			t.Fatalf("round %d: %d applies succeeded", round, applied)
		}
		if applied == 1 {
			var logs struct{ Data []map[string]any }
			e.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs?type=config.applied"}).Decode(t, &logs)
			owners := map[any]bool{}
			keys := map[any]bool{}
			for _, a := range logs.Data[0]["data"].(map[string]any)["approved_by"].([]any) {
				m := a.(map[string]any)
				if keys[m["api_key_id"]] {
					t.Errorf("round %d: approved_by counts %v twice", round, m["api_key_id"])
				}
				keys[m["api_key_id"]], owners[m["owner"]] = true, true
			}
			if len(owners) < 2 || logs.Data[0]["plan_id"] != id {
				t.Errorf("round %d: applied with the approvals of %d owners: %v", round, len(owners), logs.Data[0])
			}
		} else if got["status"] != "planned" {
			t.Errorf("round %d: no apply succeeded and the plan is %v", round, got["status"])
		}
	}

	// A rejection racing applies of a plan with its approvals.
	id := createPlanAs(t, e, creator, apiDoc("users", 60))
	review(e, a1, id, "approve", nil)
	review(e, b1, id, "approve", nil)
	reqs := []apitest.Request{{Method: "POST", Path: "/v1/config-plans/" + id + ":reject", Secret: b1, Body: map[string]any{"comment": "stop"}}}
	for range 5 {
		reqs = append(reqs, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Secret: creator})
	}
	answers := fire(reqs)
	got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id}).JSON()
	rejected := answers[0].Status == http.StatusOK
	applied := 0
	for _, r := range answers[1:] {
		if r.Status == http.StatusOK {
			applied++
		}
	}
	switch {
	case rejected && (applied > 0 || got["status"] != "rejected"):
		t.Errorf("rejected, and %d applies succeeded; the plan is %v", applied, got["status"])
	case !rejected && (applied != 1 || got["status"] != "applied" || got["rejection"] != nil):
		t.Errorf("the rejection answered %d %s, %d applies succeeded; the plan is %v", answers[0].Status, answers[0].Body, applied, got["status"])
	}
}
