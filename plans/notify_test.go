package plans

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestWebhookTypeAnnouncesEveryPlanEventButApplyStarted (§19): one type
// for each plan event of §5/§17, none for apply_started, and WebhookTypes
// lists exactly the nine.
func TestWebhookTypeAnnouncesEveryPlanEventButApplyStarted(t *testing.T) {
	want := map[string]string{
		"plan_created": "plan.created", "plan_approved": "plan.approved", "plan_rejected": "plan.rejected",
		"apply_succeeded": "plan.applied", "apply_rejected": "plan.apply_rejected", "apply_conflicted": "plan.conflicted",
		"federation_failed": "plan.federation_failed", "plan_expired": "plan.expired", "plan_rebased": "plan.rebased",
	}
	var types []string
	for ev, typ := range want {
		got, ok := WebhookType(ev)
		if !ok || got != typ {
			t.Errorf("WebhookType(%q) = %q, %v; want %q", ev, got, ok, typ)
		}
		if back, ok := PlanEventType(typ); !ok || back != ev {
			t.Errorf("PlanEventType(%q) = %q, %v; want %q", typ, back, ok, ev)
		}
		types = append(types, typ)
	}
	for _, ev := range []string{"apply_started", "", "plan.created", "config.applied"} {
		if got, ok := WebhookType(ev); ok || got != "" {
			t.Errorf("WebhookType(%q) = %q, %v; want none", ev, got, ok)
		}
	}
	all := WebhookTypes()
	if len(all) != 9 || !slices.Equal(slices.Sorted(slices.Values(all)), slices.Sorted(slices.Values(types))) {
		t.Errorf("WebhookTypes() = %v, want the nine of %v", all, types)
	}
}

// TestMessageMarshalsToTheWebhookBody (§19): type, timestamp and data,
// nothing else; code null unless set.
func TestMessageMarshalsToTheWebhookBody(t *testing.T) {
	owner := "ana@shop.example"
	m := Message{ID: "evt_1", Type: "plan.created", Timestamp: time.Date(2026, 12, 5, 7, 0, 0, 123e6, time.UTC),
		Data: MessageData{EventID: "evt_1", EnvironmentID: "env_1", PlanID: "cfgp_1", Actor: EventActor{APIKeyID: "key_1", Owner: &owner},
			Plan: MessagePlan{ID: "cfgp_1", Status: StatusPlanned, Summary: Summary{Create: 1}, CreatedBy: "key_1"}}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"plan.created","timestamp":"2026-12-05T07:00:00.123Z","data":{"event_id":"evt_1","environment_id":"env_1",` +
		`"plan_id":"cfgp_1","actor":{"api_key_id":"key_1","owner":"ana@shop.example"},"plan":{"id":"cfgp_1","status":"planned",` +
		`"summary":{"create":1,"update":0,"delete":0,"no_op":0},"approvals_required":0,"approvals_received":0,"revision_id":null,` +
		`"created_by":"key_1","created_by_owner":null},"code":null}}`
	if string(b) != want {
		t.Errorf("body\n got %s\nwant %s", b, want)
	}
}
