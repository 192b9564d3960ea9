package plans

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/keenauth/configplans/configdb"
)

// webhookTypes maps each plan event of §5/§17 to the type that announces
// it (§19); apply_started is announced by none.
var webhookTypes = map[string]string{
	"plan_created":      "plan.created",
	"plan_approved":     "plan.approved",
	"plan_rejected":     "plan.rejected",
	"apply_succeeded":   "plan.applied",
	"apply_rejected":    "plan.apply_rejected",
	"apply_conflicted":  "plan.conflicted",
	"federation_failed": "plan.federation_failed",
	"plan_expired":      "plan.expired",
	"plan_rebased":      "plan.rebased",
}

// WebhookType is the webhook and stream type that announces the plan event
// type eventType (§19), false for an event that is not announced
// (apply_started) or not known.
func WebhookType(eventType string) (string, bool) {
	t, ok := webhookTypes[eventType]
	return t, ok
}

// PlanEventType is the plan event type that the webhook type announces,
// the inverse of WebhookType.
func PlanEventType(webhookType string) (string, bool) {
	for ev, t := range webhookTypes {
		if t == webhookType {
			return ev, true
		}
	}
	return "", false
}

// WebhookTypes are the nine webhook types, in the order of §19.
func WebhookTypes() []string {
	return []string{"plan.created", "plan.approved", "plan.rejected", "plan.applied", "plan.apply_rejected",
		"plan.conflicted", "plan.federation_failed", "plan.expired", "plan.rebased"}
}

// Message announces one plan event: the body of a webhook delivery and the
// data of a stream message (§19). ID is the event's id (evt_…), which the
// body carries as data.event_id; a delivery's webhook-id (msg_…) is the
// delivery's, not the message's.
type Message struct {
	ID        string
	Type      string
	Timestamp time.Time
	Data      MessageData
}

// MessageData is a message's data member. It never holds a spec, a diff or
// a secret: the plan is shown by its head only.
type MessageData struct {
	EventID       string      `json:"event_id"`
	EnvironmentID string      `json:"environment_id"`
	PlanID        string      `json:"plan_id"`
	Actor         EventActor  `json:"actor"`
	Plan          MessagePlan `json:"plan"`
	// Code is the refusal's code of a plan.apply_rejected, null otherwise.
	Code *string `json:"code"`
}

// MessagePlan is the plan of a message, as it was at the event.
type MessagePlan struct {
	ID                string  `json:"id"`
	Status            Status  `json:"status"`
	Summary           Summary `json:"summary"`
	ApprovalsRequired int     `json:"approvals_required"`
	ApprovalsReceived int     `json:"approvals_received"`
	RevisionID        *string `json:"revision_id"`
	CreatedBy         string  `json:"created_by"`
	CreatedByOwner    *string `json:"created_by_owner"`
}

// MarshalJSON writes the webhook body: {"type", "timestamp", "data"}.
func (m Message) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type      string      `json:"type"`
		Timestamp Time        `json:"timestamp"`
		Data      MessageData `json:"data"`
	}{m.Type, Time(m.Timestamp), m.Data})
}

// BuildMessages builds the messages that announce evs, events of the
// environment envID, in their order; an event that no type announces
// (apply_started), or whose plan no longer exists (retention), has none.
// It reads at most five times whatever the number of events: the plans'
// heads, their approvals, their conflicts, the keys' owners and the
// policies.
//
// The plan is shown as it was at the event, which is what a receiver that
// gets the message late (a retry, a replay of the stream) expects:
//   - status: the status the event left the plan in — planned after
//     plan_created, plan_approved, apply_rejected and federation_failed;
//     applied after apply_succeeded; conflicted, rejected, expired after
//     apply_conflicted, plan_rejected, plan_expired. A rebase leaves its
//     source as it was: conflicted if it had been, else expired if it was
//     past its validity, else planned.
//   - approvals_received: the people (§17) who had approved by the event;
//   - revision_id: the revision an apply_succeeded recorded, null for
//     every other event (a plan has a revision only once applied);
//   - approvals_required: what an apply would need when the message is
//     built, as the plan's own approvals_required: the largest of the
//     policy's required_approvals then in force (the policies of the past
//     are not kept) and the approvals its rule_approval warnings asked
//     (§18), 0 for a plan whose every change is a no_op.
func BuildMessages(ctx context.Context, r configdb.Reader, envID string, evs []configdb.PlanEventRow) ([]Message, error) {
	var planIDs, keyIDs []string
	for _, ev := range evs {
		if _, ok := WebhookType(ev.Type); ok {
			planIDs = append(planIDs, ev.PlanID)
			keyIDs = append(keyIDs, ev.APIKeyID)
		}
	}
	if len(planIDs) == 0 {
		return []Message{}, nil
	}
	planIDs, keyIDs = sortedUnique(planIDs), sortedUnique(keyIDs)
	heads, err := r.PlanHeads(ctx, envID, planIDs)
	if err != nil {
		return nil, err
	}
	approvals, err := r.Approvals(ctx, envID, planIDs)
	if err != nil {
		return nil, err
	}
	conflicts, err := r.EventsOfTypes(ctx, envID, planIDs, []string{"apply_conflicted"})
	if err != nil {
		return nil, err
	}
	owners, err := r.APIKeyOwners(ctx, envID, keyIDs)
	if err != nil {
		return nil, err
	}
	raw, err := r.LoadPolicies(ctx, envID)
	if err != nil {
		return nil, err
	}
	pol, err := policiesOf(raw)
	if err != nil {
		return nil, fmt.Errorf("policies of %s: %w", envID, err)
	}
	out := make([]Message, 0, len(evs))
	for _, ev := range evs {
		typ, ok := WebhookType(ev.Type)
		head, found := heads[ev.PlanID]
		if !ok || !found {
			continue
		}
		var data struct {
			Code       *string `json:"code"`
			RevisionID *string `json:"revision_id"`
		}
		if len(ev.Data) > 0 {
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				return nil, fmt.Errorf("event %s: decode: %w", ev.ID, err)
			}
		}
		var summary Summary
		if err := json.Unmarshal(head.Summary, &summary); err != nil {
			return nil, fmt.Errorf("plan %s: decode summary: %w", head.ID, err)
		}
		var warnings []Warning
		if len(head.Warnings) > 0 {
			if err := json.Unmarshal(head.Warnings, &warnings); err != nil {
				return nil, fmt.Errorf("plan %s: decode warnings: %w", head.ID, err)
			}
		}
		required := 0
		if summary.Create+summary.Update+summary.Delete > 0 {
			required = max(pol.RequiredApprovals, ruleApprovals(warnings))
		}
		var before []Approval
		for _, a := range approvalsOf(approvals[ev.PlanID]) {
			if !time.Time(a.ApprovedAt).After(ev.CreatedAt) {
				before = append(before, a)
			}
		}
		m := Message{ID: ev.ID, Type: typ, Timestamp: ev.CreatedAt, Data: MessageData{
			EventID: ev.ID, EnvironmentID: envID, PlanID: ev.PlanID,
			Actor: EventActor{APIKeyID: ev.APIKeyID, Owner: owners[ev.APIKeyID]},
			Plan: MessagePlan{ID: head.ID, Status: statusAtEvent(ev, head, conflicts[ev.PlanID]), Summary: summary,
				ApprovalsRequired: required, ApprovalsReceived: approvalsReceived(before),
				CreatedBy: head.CreatedBy, CreatedByOwner: head.CreatedByOwner}}}
		switch ev.Type {
		case "apply_succeeded":
			m.Data.Plan.RevisionID = data.RevisionID
		case "apply_rejected":
			m.Data.Code = data.Code
		}
		out = append(out, m)
	}
	return out, nil
}

// statusAtEvent is the status that ev left its plan in (BuildMessages);
// conflicts are the plan's apply_conflicted events.
func statusAtEvent(ev configdb.PlanEventRow, head configdb.PlanRow, conflicts []configdb.PlanEventRow) Status {
	switch ev.Type {
	case "apply_succeeded":
		return StatusApplied
	case "apply_conflicted":
		return StatusConflicted
	case "plan_rejected":
		return StatusRejected
	case "plan_expired":
		return StatusExpired
	case "plan_rebased":
		if slices.ContainsFunc(conflicts, func(c configdb.PlanEventRow) bool { return c.CreatedAt.Before(ev.CreatedAt) }) {
			return StatusConflicted
		}
		if !ev.CreatedAt.Before(head.ExpiresAt) {
			return StatusExpired
		}
	}
	return StatusPlanned
}
