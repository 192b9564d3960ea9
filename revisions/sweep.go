package revisions

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// PruneBatch deletes at most limit revisions of env that are beyond the
// keep most recent or expired at now, and returns how many it deleted.
// Every statement names the environment, so each runs on one shard when
// the tables are distributed by environment_id.
func PruneBatch(ctx context.Context, db *gorm.DB, env string, keep int, now time.Time, limit int) (int, error) {
	var ids []string
	err := db.WithContext(ctx).Raw(`SELECT id FROM config_revisions WHERE environment_id = ? AND (expires_at <= ? OR id < COALESCE(
		(SELECT id FROM config_revisions WHERE environment_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?), ''))
		ORDER BY id LIMIT ?`, env, now, env, keep-1, limit).Scan(&ids).Error
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	res := db.WithContext(ctx).Exec(`DELETE FROM config_revisions WHERE environment_id = ? AND id IN ?`, env, ids)
	return int(res.RowsAffected), res.Error
}
