package plans

import (
	"context"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// WebhookDelivery is a delivery as the API shows it (§19).
type WebhookDelivery struct {
	ID             string  `json:"id"`
	EventType      string  `json:"event_type"`
	EventID        string  `json:"event_id"`
	PlanID         string  `json:"plan_id"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	LastAttemptAt  *Time   `json:"last_attempt_at"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
	NextAttemptAt  *Time   `json:"next_attempt_at"`
	CreatedAt      Time    `json:"created_at"`
}

func deliveryOf(r configdb.WebhookDeliveryRow) WebhookDelivery {
	return WebhookDelivery{ID: r.ID, EventType: r.EventType, EventID: r.EventID, PlanID: r.PlanID, Status: r.Status, Attempts: r.Attempts,
		LastAttemptAt: timePtr(r.LastAttemptAt), LastStatusCode: r.LastStatusCode, LastError: r.LastError,
		NextAttemptAt: timePtr(r.NextAttemptAt), CreatedAt: Time(r.CreatedAt)}
}

var errDeliveryNotFound = &config.Error{Code: config.CodeNotFound, Detail: "no such delivery of this webhook endpoint"}

// ListDeliveries lists an endpoint's deliveries, newest first
// (webhooks:read).
func (w *Webhooks) ListDeliveries(ctx context.Context, a Actor, endpointID string, lp ListParams) (Page[WebhookDelivery], error) {
	if err := a.Require(config.PermWebhooksRead); err != nil {
		return Page[WebhookDelivery]{}, err
	}
	if _, err := w.loadEndpoint(ctx, w.db.Reader, a, endpointID); err != nil {
		return Page[WebhookDelivery]{}, err
	}
	rows, err := w.db.ListDeliveries(ctx, a.EnvironmentID, endpointID, lp.Cursor, lp.Limit+1)
	if err != nil {
		return Page[WebhookDelivery]{}, err
	}
	out := make([]WebhookDelivery, len(rows))
	for i, r := range rows {
		out[i] = deliveryOf(r)
	}
	return page(out, lp.Limit, func(d WebhookDelivery) string { return d.ID }), nil
}

// RetryDelivery queues a failed delivery again, due at once, with its
// webhook-id (webhooks:write): one more attempt, after which it is failed
// again if that fails. 409 conflict for a delivery that is not failed.
func (w *Webhooks) RetryDelivery(ctx context.Context, a Actor, endpointID, id string) (WebhookDelivery, error) {
	if err := a.Require(config.PermWebhooksWrite); err != nil {
		return WebhookDelivery{}, err
	}
	var out WebhookDelivery
	err := w.db.Write(ctx, func(tx *configdb.Tx) error {
		if _, err := w.loadEndpoint(ctx, tx.Reader, a, endpointID); err != nil {
			return err
		}
		if !config.ValidID(PrefixWebhookMessage, id) {
			return errDeliveryNotFound
		}
		row, err := tx.LoadDelivery(ctx, a.EnvironmentID, endpointID, id)
		if isNotFound(err) {
			return errDeliveryNotFound
		}
		if err != nil {
			return err
		}
		queued, err := tx.RequeueDelivery(ctx, a.EnvironmentID, endpointID, id)
		if err != nil {
			return err
		}
		if !queued {
			return &config.Error{Code: config.CodeConflict, Detail: "only a failed delivery can be retried; this one is " + row.Status,
				Extra: map[string]any{"delivery_status": row.Status}}
		}
		if row, err = tx.LoadDelivery(ctx, a.EnvironmentID, endpointID, id); err != nil {
			return err
		}
		out = deliveryOf(*row)
		return nil
	})
	return out, err
}
