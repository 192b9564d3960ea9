package configdb

import (
	"context"
	"encoding/json"
	"fmt"
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

// ReviewedPlan is a stored plan with what its review needs (§17): its
// approvals, oldest first, and the policies of its environment (nil: none).
type ReviewedPlan struct {
	Plan      *PlanRow
	Approvals []ApprovalRow
	Policies  JSON
}

// LoadReviewedPlan reads the plan k, its approvals and its environment's
// policies (ErrNotFound when there is no such plan). On PostgreSQL it is
// one statement, where LoadPlan, Approvals and LoadPolicies are three
// round trips: the approvals come as one json value of the plan's row, and
// changes over changesWhole bytes with a second statement (ReadChanges).
func (r Reader) LoadReviewedPlan(ctx context.Context, k PlanKey) (ReviewedPlan, error) {
	return r.loadReviewedPlan(ctx, k, true)
}

// LoadReviewedPlanHead is LoadReviewedPlan for a caller that holds the
// plan's changes already (a plan's changes never change once stored, but
// for the ids an apply gives the connections it creates): on PostgreSQL
// the row comes without them, Changes nil and ChangesBytes their size,
// for CompleteChanges to read them when the caller's do not do. On SQLite
// the row holds them.
func (r Reader) LoadReviewedPlanHead(ctx context.Context, k PlanKey) (ReviewedPlan, error) {
	return r.loadReviewedPlan(ctx, k, false)
}

// ReadsPlanHeads reports whether LoadReviewedPlanHead leaves a plan's
// changes out (PostgreSQL). SQLite reads them in the process.
func (r Reader) ReadsPlanHeads() bool { return !r.sqlite }

func (r Reader) loadReviewedPlan(ctx context.Context, k PlanKey, changes bool) (ReviewedPlan, error) {
	if r.sqlite {
		return r.loadReviewedPlanEach(ctx, k)
	}
	var row struct {
		PlanRow         `gorm:"embedded"`
		ReviewPolicies  JSON
		ReviewApprovals JSON
	}
	found := false
	columns := planColumns("cp")
	if !changes {
		columns = planColumnsWithoutChanges("cp")
	}
	err := scanRawFound(r.q(ctx).Raw(`SELECT `+columns+`, (SELECT policies FROM environment_policies WHERE environment_id = cp.environment_id) AS review_policies,
			`+approvalsJSON("cp.environment_id", "cp.id")+` AS review_approvals
		FROM config_plans cp WHERE cp.environment_id = ? AND cp.id = ?`, k.EnvironmentID, k.ID), &row, &found)
	if err != nil {
		return ReviewedPlan{}, interpretError(err)
	}
	if !found {
		return ReviewedPlan{}, ErrNotFound
	}
	approvals, err := approvalRows(k, row.ReviewApprovals)
	if err != nil {
		return ReviewedPlan{}, err
	}
	if changes {
		if err := r.CompleteChanges(ctx, &row.PlanRow); err != nil {
			return ReviewedPlan{}, err
		}
	}
	return ReviewedPlan{Plan: &row.PlanRow, Approvals: approvals, Policies: row.ReviewPolicies}, nil
}

// approvalsJSON is a scalar subquery of the approvals of the plan env, id
// (SQL expressions), oldest first as Approvals reads them: one json array,
// or NULL when there are none (PostgreSQL).
func approvalsJSON(env, id string) string {
	return `(SELECT json_agg(json_build_object('api_key_id', a.api_key_id, 'owner', a.owner, 'approved_at', a.approved_at, 'comment', a.comment)
			ORDER BY a.approved_at, a.api_key_id)
		FROM plan_approvals a WHERE a.environment_id = ` + env + ` AND a.plan_id = ` + id + `)`
}

// approvalRows decodes the approvals of the plan k read by approvalsJSON
// (nil: none).
func approvalRows(k PlanKey, raw JSON) ([]ApprovalRow, error) {
	if raw == nil {
		return nil, nil
	}
	var as []struct {
		APIKeyID   string    `json:"api_key_id"`
		Owner      *string   `json:"owner"`
		ApprovedAt time.Time `json:"approved_at"`
		Comment    *string   `json:"comment"`
	}
	if err := json.Unmarshal(raw, &as); err != nil {
		return nil, fmt.Errorf("the approvals of plan %s: %w", k.ID, err)
	}
	out := make([]ApprovalRow, len(as))
	for i, a := range as {
		out[i] = ApprovalRow{EnvironmentID: k.EnvironmentID, PlanID: k.ID, APIKeyID: a.APIKeyID, Owner: a.Owner, ApprovedAt: a.ApprovedAt, Comment: a.Comment}
	}
	return out, nil
}

// loadReviewedPlanEach is LoadReviewedPlan one statement at a time, for
// SQLite.
func (r Reader) loadReviewedPlanEach(ctx context.Context, k PlanKey) (ReviewedPlan, error) {
	row, err := r.LoadPlan(ctx, k)
	if err != nil {
		return ReviewedPlan{}, err
	}
	approvals, err := r.Approvals(ctx, k.EnvironmentID, []string{k.ID})
	if err != nil {
		return ReviewedPlan{}, err
	}
	policies, err := r.LoadPolicies(ctx, k.EnvironmentID)
	if err != nil {
		return ReviewedPlan{}, err
	}
	return ReviewedPlan{Plan: row, Approvals: approvals[k.ID], Policies: policies}, nil
}
