package configdb

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// LoadPolicies reads the policies of an environment (nil when it has none).
func (r Reader) LoadPolicies(ctx context.Context, envID string) (JSON, error) {
	var row PolicyRow
	err := interpretError(r.q(ctx).Where("environment_id = ?", envID).Take(&row).Error)
	if isNotFound(err) {
		return nil, nil
	}
	return row.Policies, err
}

// PutPolicies replaces the policies of an environment.
func (tx *Tx) PutPolicies(ctx context.Context, envID string, policies JSON) error {
	return tx.q(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "environment_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"policies", "updated_at"}),
	}).Create(&PolicyRow{EnvironmentID: envID, Policies: policies, UpdatedAt: tx.Now}).Error
}

// RecentTokens returns the applications of keys that received a token
// after since.
func (r Reader) RecentTokens(ctx context.Context, envID string, keys []string, since time.Time) (map[string]bool, error) {
	out := map[string]bool{}
	if len(keys) == 0 {
		return out, nil
	}
	var rows []TokenActivityRow
	err := r.q(ctx).Where("environment_id = ? AND application_key IN ? AND last_issued_at > ?", envID, keys, since).Find(&rows).Error
	if err != nil {
		return nil, interpretError(err)
	}
	for _, row := range rows {
		out[row.ApplicationKey] = true
	}
	return out, nil
}

// RecordTokenActivity keeps the latest token time of an application.
func (tx *Tx) RecordTokenActivity(ctx context.Context, envID, appKey string, issuedAt time.Time) error {
	greatest := "GREATEST"
	if tx.sqlite {
		greatest = "MAX" // SQLite's MAX of two values; its UTC time text sorts as time
	}
	return tx.q(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "environment_id"}, {Name: "application_key"}},
		DoUpdates: clause.Set{{Column: clause.Column{Name: "last_issued_at"}, Value: gorm.Expr(greatest + "(token_activity.last_issued_at, excluded.last_issued_at)")}},
	}).Create(&TokenActivityRow{EnvironmentID: envID, ApplicationKey: appKey, LastIssuedAt: issuedAt.UTC()}).Error
}
