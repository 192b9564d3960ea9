package configdb

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// WebhookEndpointRow is a webhook endpoint of an environment (§19). Secret
// (whsec_…) signs every delivery; PreviousSecret signs beside it until
// PreviousSecretUntil after a rotation.
type WebhookEndpointRow struct {
	EnvironmentID       string `gorm:"primaryKey"`
	ID                  string `gorm:"primaryKey"`
	URL                 string `gorm:"column:url"`
	Events              JSON
	Description         *string
	Status              string
	Secret              string
	PreviousSecret      *string
	PreviousSecretUntil *time.Time
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// TableName names the table.
func (WebhookEndpointRow) TableName() string { return "webhook_endpoints" }

// WebhookDeliveryRow is a delivery of the outbox: one plan event to one
// endpoint. The trigger on plan_events writes it.
type WebhookDeliveryRow struct {
	EnvironmentID  string `gorm:"primaryKey"`
	ID             string `gorm:"primaryKey"`
	EndpointID     string
	EventID        string
	PlanID         string
	EventType      string
	Status         string
	Attempts       int
	LastAttemptAt  *time.Time
	LastStatusCode *int
	LastError      *string
	NextAttemptAt  *time.Time
	LeaseUntil     *time.Time
	Claim          *string
	Body           *string
	CreatedAt      time.Time
}

// TableName names the table.
func (WebhookDeliveryRow) TableName() string { return "webhook_deliveries" }

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// LockEndpoints serialises the changes of an environment's endpoints (the
// limit on their number counts under it): on PostgreSQL it locks the
// environment's row; SQLite has one writer.
func (tx *Tx) LockEndpoints(ctx context.Context, envID string) error {
	if tx.sqlite {
		return nil
	}
	var n int64
	return interpretError(tx.q(ctx).Raw("SELECT 1 FROM environments WHERE id = ? FOR UPDATE", envID).Scan(&n).Error)
}

// CountEndpoints counts the endpoints of an environment.
func (r Reader) CountEndpoints(ctx context.Context, envID string) (int64, error) {
	var n int64
	err := r.q(ctx).Model(&WebhookEndpointRow{}).Where("environment_id = ?", envID).Count(&n).Error
	return n, interpretError(err)
}

// InsertEndpoint stores a new endpoint.
func (tx *Tx) InsertEndpoint(ctx context.Context, row *WebhookEndpointRow) error {
	return interpretError(tx.q(ctx).Create(row).Error)
}

// LoadEndpoint reads an endpoint (ErrNotFound when there is none).
func (r Reader) LoadEndpoint(ctx context.Context, envID, id string) (*WebhookEndpointRow, error) {
	var row WebhookEndpointRow
	if err := r.q(ctx).Where("environment_id = ? AND id = ?", envID, id).Take(&row).Error; err != nil {
		return nil, interpretError(err)
	}
	return &row, nil
}

// ListEndpoints reads up to limit endpoints of an environment older than
// the id before ("" for the newest), newest first.
func (r Reader) ListEndpoints(ctx context.Context, envID, before string, limit int) ([]WebhookEndpointRow, error) {
	q := r.q(ctx).Where("environment_id = ?", envID)
	if before != "" {
		q = q.Where("id < ?", before)
	}
	var rows []WebhookEndpointRow
	if err := q.Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	return rows, nil
}

// UpdateEndpoint writes updates to an endpoint, and its updated_at.
func (tx *Tx) UpdateEndpoint(ctx context.Context, envID, id string, updates map[string]any) (bool, error) {
	updates["updated_at"] = tx.Now
	return rows(tx.q(ctx).Model(&WebhookEndpointRow{}).Where("environment_id = ? AND id = ?", envID, id).Updates(updates))
}

// DeleteEndpoint deletes an endpoint and its deliveries; false when there
// was none.
func (tx *Tx) DeleteEndpoint(ctx context.Context, envID, id string) (bool, error) {
	if err := tx.q(ctx).Exec("DELETE FROM webhook_deliveries WHERE environment_id = ? AND endpoint_id = ?", envID, id).Error; err != nil {
		return false, interpretError(err)
	}
	return rows(tx.q(ctx).Exec("DELETE FROM webhook_endpoints WHERE environment_id = ? AND id = ?", envID, id))
}

// ListDeliveries reads up to limit deliveries of an endpoint older than
// the id before ("" for the newest), newest first.
func (r Reader) ListDeliveries(ctx context.Context, envID, endpointID, before string, limit int) ([]WebhookDeliveryRow, error) {
	q := r.q(ctx).Where("environment_id = ? AND endpoint_id = ?", envID, endpointID)
	if before != "" {
		q = q.Where("id < ?", before)
	}
	var rows []WebhookDeliveryRow
	if err := q.Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	return rows, nil
}

// LoadDelivery reads a delivery of an endpoint (ErrNotFound when there is
// none).
func (r Reader) LoadDelivery(ctx context.Context, envID, endpointID, id string) (*WebhookDeliveryRow, error) {
	var row WebhookDeliveryRow
	if err := r.q(ctx).Where("environment_id = ? AND endpoint_id = ? AND id = ?", envID, endpointID, id).Take(&row).Error; err != nil {
		return nil, interpretError(err)
	}
	return &row, nil
}

// RequeueDelivery makes a failed delivery pending again, due now: false
// when it is not failed.
func (tx *Tx) RequeueDelivery(ctx context.Context, envID, endpointID, id string) (bool, error) {
	return rows(tx.q(ctx).Model(&WebhookDeliveryRow{}).
		Where("environment_id = ? AND endpoint_id = ? AND id = ? AND status = ?", envID, endpointID, id, DeliveryFailed).
		Updates(map[string]any{"status": DeliveryPending, "next_attempt_at": tx.Now, "lease_until": nil, "claim": nil}))
}

// ClaimDeliveries claims up to limit due pending deliveries of enabled
// endpoints, of any environment, under claim until lease from now: one not
// claimed yet, or whose claim's lease has passed (its dispatcher died).
// On PostgreSQL concurrent claims skip each other's rows (FOR UPDATE SKIP
// LOCKED): no row is claimed twice while its lease holds.
func (tx *Tx) ClaimDeliveries(ctx context.Context, claim string, lease time.Duration, limit int) ([]WebhookDeliveryRow, error) {
	lock := ""
	if !tx.sqlite {
		lock = " FOR UPDATE OF d2 SKIP LOCKED"
	}
	var out []WebhookDeliveryRow
	err := scanRaw(tx.q(ctx).Raw(`UPDATE webhook_deliveries SET claim = ?, lease_until = ?
		WHERE (environment_id, id) IN (
			SELECT d2.environment_id, d2.id FROM webhook_deliveries d2
			JOIN webhook_endpoints e ON e.environment_id = d2.environment_id AND e.id = d2.endpoint_id AND e.status = 'enabled'
			WHERE d2.status = 'pending' AND d2.next_attempt_at <= ? AND (d2.lease_until IS NULL OR d2.lease_until <= ?)
			ORDER BY d2.next_attempt_at LIMIT ?`+lock+`)
		RETURNING *`, claim, tx.Now.Add(lease), tx.Now, tx.Now, limit), &out)
	return out, interpretError(err)
}

// EndpointsByID reads endpoints of an environment, by id.
func (r Reader) EndpointsByID(ctx context.Context, envID string, ids []string) (map[string]WebhookEndpointRow, error) {
	out := map[string]WebhookEndpointRow{}
	var rs []WebhookEndpointRow
	if err := r.q(ctx).Where("environment_id = ? AND id IN ?", envID, ids).Find(&rs).Error; err != nil {
		return nil, interpretError(err)
	}
	for _, e := range rs {
		out[e.ID] = e
	}
	return out, nil
}

// EventsByID reads events of an environment, by id.
func (r Reader) EventsByID(ctx context.Context, envID string, ids []string) ([]PlanEventRow, error) {
	var rs []PlanEventRow
	err := r.q(ctx).Where("environment_id = ? AND id IN ?", envID, ids).Order("id").Find(&rs).Error
	return rs, interpretError(err)
}

// Attempt is the outcome of one attempt of a delivery.
type Attempt struct {
	Status     string // pending (to retry at Next), succeeded or failed
	StatusCode *int
	Error      *string
	Next       *time.Time
	Body       string // the message sent, kept for the next attempts
}

// RecordAttempt records an attempt of the delivery that claim holds, and
// gives up the claim; false when the claim was lost (taken over).
func (tx *Tx) RecordAttempt(ctx context.Context, envID, id, claim string, a Attempt) (bool, error) {
	return rows(tx.q(ctx).Model(&WebhookDeliveryRow{}).Where("environment_id = ? AND id = ? AND claim = ?", envID, id, claim).
		Updates(map[string]any{"status": a.Status, "attempts": gorm.Expr("attempts + 1"), "last_attempt_at": tx.Now,
			"last_status_code": a.StatusCode, "last_error": a.Error, "next_attempt_at": a.Next, "lease_until": nil, "claim": nil,
			"body": a.Body}))
}
