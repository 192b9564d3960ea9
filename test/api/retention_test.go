package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// TestSweepDeletesPlansPastTheirRetention: the sweep deletes, in batches,
// the plans older than the retention that can no longer change (applied,
// and planned ones past their validity) with their events and expired
// revisions; it keeps recent plans and an applying one.
func TestSweepDeletesPlansPastTheirRetention(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	var old []string
	for i := range 4 {
		old = append(old, k.planAndApply(envSettings(fmt.Sprintf("Old %d", i)), false, nil)["id"].(string))
	}
	old = append(old, k.planID(envSettings("Never applied"), false))
	// A rejected plan, with an approval (§17): both go with it.
	rejected := k.planID(envSettings("Rejected"), false)
	approver := k.e.Key(config.AllPermissions()...)
	for _, verb := range []string{"approve", "reject"} {
		if r := k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + rejected + ":" + verb, Secret: approver,
			Body: map[string]any{"comment": "no"}}); r.Status != 200 {
			t.Fatalf("%s: %d %s", verb, r.Status, r.Body)
		}
	}
	if n := k.count("plan_approvals", "plan_id = ?", rejected); n != 1 {
		t.Fatalf("%d approvals of the rejected plan, want 1", n)
	}
	old = append(old, rejected)
	applying := k.planID(envSettings("Applying"), false)
	if err := k.e.DB.DB.Exec("UPDATE config_plans SET status = 'applying' WHERE environment_id = ? AND id = ?", k.e.EnvID, applying).Error; err != nil {
		t.Fatal(err)
	}
	oldEvents := k.count("plan_events", "plan_id IN ?", old)
	if oldEvents < int64(len(old)) {
		t.Fatalf("%d events of the old plans, want at least one each", oldEvents)
	}

	k.e.Clock.Advance(91 * 24 * time.Hour)
	recentApplied := k.planAndApply(envSettings("Recent"), false, nil)["id"].(string)
	recentPlanned := k.planID(envSettings("Recent planned"), false)

	expiredRevisions := int(k.count("config_revisions", "")) - 1 // an apply prunes its environment's too
	res, err := k.e.Domain.Retention.Sweep(context.Background(), plans.SweepConfig{PlanRetention: 90 * 24 * time.Hour, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := plans.SweepResult{Revisions: expiredRevisions, Plans: len(old), PlanEvents: int(oldEvents)}
	if res != want {
		t.Errorf("sweep deleted %+v, want %+v", res, want)
	}
	for _, id := range old {
		assertProblem(t, k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id}), 404, "not_found", nil)
	}
	if n := k.count("plan_events", "plan_id IN ?", old); n != 0 {
		t.Errorf("%d events of deleted plans remain", n)
	}
	if n := k.count("plan_approvals", "plan_id IN ?", old); n != 0 {
		t.Errorf("%d approvals of deleted plans remain", n)
	}
	for _, id := range []string{recentApplied, recentPlanned, applying} {
		if n := k.count("config_plans", "environment_id = ? AND id = ?", k.e.EnvID, id); n != 1 {
			t.Errorf("plan %s was deleted", id)
		}
	}
	if n := k.count("config_revisions", ""); n != 1 {
		t.Errorf("%d revisions left, want the recent one", n)
	}
	if again, err := k.e.Domain.Retention.Sweep(context.Background(), plans.SweepConfig{PlanRetention: 90 * 24 * time.Hour}); err != nil || again != (plans.SweepResult{}) {
		t.Errorf("a second sweep deleted %+v, %v; want nothing", again, err)
	}
}
