package configdb

import (
	"context"
	"errors"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ConfirmedMaterial returns, per connection id, the hash of the OIDC
// material the federation service confirmed.
func (r Reader) ConfirmedMaterial(ctx context.Context, envID string) (map[string]string, error) {
	var rows []struct {
		ConnectionID string
		MaterialHash string
	}
	err := r.q(ctx).Table("connection_materials").Select("connection_id, material_hash").
		Where("environment_id = ?", envID).Find(&rows).Error
	if err != nil {
		return nil, interpretError(err)
	}
	out := map[string]string{}
	for _, row := range rows {
		out[row.ConnectionID] = row.MaterialHash
	}
	return out, nil
}

// ConfirmMaterial records that the federation service holds the material
// of hash for a connection.
func (tx *Tx) ConfirmMaterial(ctx context.Context, envID, connectionID, hash string) error {
	return tx.q(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "environment_id"}, {Name: "connection_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"material_hash", "confirmed_at"}),
	}).Table("connection_materials").Create(map[string]any{"environment_id": envID, "connection_id": connectionID,
		"material_hash": hash, "confirmed_at": tx.Now}).Error
}

// ForgetMaterials drops every confirmation of material: the in-process
// federation service of dev mode starts empty.
func (d *DB) ForgetMaterials(ctx context.Context) error {
	return d.Write(ctx, func(tx *Tx) error { return tx.q(ctx).Exec("DELETE FROM connection_materials").Error })
}

// ConnectionTest is the last test of a connection's material.
type ConnectionTest struct {
	MaterialHash string
	Status       string
	Reason       *string
}

// LoadConnectionTest reads the last test of a connection (the zero value
// when it was never tested).
func (r Reader) LoadConnectionTest(ctx context.Context, envID, connectionID string) (ConnectionTest, error) {
	var t ConnectionTest
	err := r.q(ctx).Table("connection_tests").Select("material_hash, status").
		Where("environment_id = ? AND connection_id = ?", envID, connectionID).Take(&t).Error
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return t, err
	}
	return t, nil
}

// RecordConnectionTest keeps the result of a connection's test, at the
// transaction's time.
func (tx *Tx) RecordConnectionTest(ctx context.Context, envID, connectionID string, t ConnectionTest) error {
	return tx.q(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "environment_id"}, {Name: "connection_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"material_hash", "status", "reason", "tested_at"}),
	}).Table("connection_tests").Create(map[string]any{"environment_id": envID, "connection_id": connectionID,
		"material_hash": t.MaterialHash, "status": t.Status, "reason": t.Reason, "tested_at": tx.Now}).Error
}
