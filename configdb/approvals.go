package configdb

import (
	"context"
	"time"

	"gorm.io/gorm/clause"
)

// ApprovalRow is an approval of a plan (§17), one per approving key.
type ApprovalRow struct {
	EnvironmentID string `gorm:"primaryKey"`
	PlanID        string `gorm:"primaryKey"`
	APIKeyID      string `gorm:"primaryKey;column:api_key_id"`
	Owner         *string
	ApprovedAt    time.Time
	Comment       *string
}

// TableName names the table.
func (ApprovalRow) TableName() string { return "plan_approvals" }

// LockPlanForReview locks the plan k for an approval or a rejection and
// reads it. It writes the row (status = status): on PostgreSQL the lock is
// the one an apply's claim and an apply's transaction take, and a
// concurrent apply's transaction that read the plan before this one
// commits fails to serialize and runs again, counting what this one
// added; on SQLite it makes the transaction the one writer. On PostgreSQL
// the review's advisory lock is taken first (lockReview), so that an apply
// that finds the row locked waits for the review (AwaitReview) instead of
// answering that the plan is being applied. ErrNotFound when there is no
// such plan.
func (tx *Tx) LockPlanForReview(ctx context.Context, k PlanKey) (*PlanRow, error) {
	if err := tx.lockReview(ctx, k); err != nil {
		return nil, err
	}
	q, env, id := k.where()
	ok, err := rows(tx.q(ctx).Exec("UPDATE config_plans SET status = status WHERE "+q, env, id))
	if err != nil {
		return nil, interpretError(err)
	}
	if !ok {
		return nil, ErrNotFound
	}
	return tx.LoadPlan(ctx, k)
}

// AddApproval records an approval at the transaction's time, unless the
// key approved the plan already (added is then false).
func (tx *Tx) AddApproval(ctx context.Context, a ApprovalRow) (added bool, err error) {
	a.ApprovedAt = tx.Now
	return rows(tx.q(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&a))
}

// RejectPlan makes the plan k rejected with rejection (JSON).
func (tx *Tx) RejectPlan(ctx context.Context, k PlanKey, rejection JSON) error {
	q, env, id := k.where()
	return tx.q(ctx).Model(&PlanRow{}).Where(q, env, id).
		Updates(map[string]any{"status": rejected, "rejection": rejection, "lease_token": "", "lease_until": nil}).Error
}

// Approvals reads the approvals of the plans ids of an environment, by
// plan id, oldest first.
func (r Reader) Approvals(ctx context.Context, envID string, ids []string) (map[string][]ApprovalRow, error) {
	out := map[string][]ApprovalRow{}
	if len(ids) == 0 {
		return out, nil
	}
	var rs []ApprovalRow
	if err := r.q(ctx).Where("environment_id = ? AND plan_id IN ?", envID, ids).Order("approved_at, api_key_id").Find(&rs).Error; err != nil {
		return nil, interpretError(err)
	}
	for _, a := range rs {
		out[a.PlanID] = append(out[a.PlanID], a)
	}
	return out, nil
}
