package configdb

import "context"

// RecordLogs adds entries to the management log.
func (tx *Tx) RecordLogs(ctx context.Context, logs []LogRow) error {
	return tx.q(ctx).CreateInBatches(logs, 500).Error
}

// LogFilter selects a page of the management log, newest first.
type LogFilter struct {
	EnvironmentID string
	Type          string // "" for every type
	Before        string // an id: only older entries
	Limit         int
}

// ListLogs reads the entries of f, newest first.
func (r Reader) ListLogs(ctx context.Context, f LogFilter) ([]LogRow, error) {
	q := r.q(ctx).Where("environment_id = ?", f.EnvironmentID)
	if f.Type != "" {
		q = q.Where("type = ?", f.Type)
	}
	if f.Before != "" {
		q = q.Where("id < ?", f.Before)
	}
	var rows []LogRow
	if err := q.Order("id DESC").Limit(f.Limit).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	return rows, nil
}

// HasLog reports whether the management log holds the entry id: an
// apply's config.applied entry exists once its transaction committed.
func (r Reader) HasLog(ctx context.Context, envID, id string) (bool, error) {
	var n int64
	err := r.q(ctx).Model(&LogRow{}).Where("environment_id = ? AND id = ?", envID, id).Count(&n).Error
	return n > 0, interpretError(err)
}
