package configdb

import "context"

// CreateAPIKey stores an API key (its secret's hash only) at the
// transaction's time.
func (tx *Tx) CreateAPIKey(ctx context.Context, k *APIKey) error {
	k.CreatedAt = tx.Now
	return tx.q(ctx).Create(k).Error
}

// RevokeAPIKey revokes the key id of an environment. It reports false when
// the key does not exist; revoking a revoked key changes nothing.
func (tx *Tx) RevokeAPIKey(ctx context.Context, envID, id string) (bool, error) {
	ok, err := rows(tx.q(ctx).Model(&APIKey{}).Where("environment_id = ? AND id = ? AND revoked_at IS NULL", envID, id).Update("revoked_at", tx.Now))
	if err != nil || ok {
		return ok, err
	}
	var n int64
	err = tx.q(ctx).Model(&APIKey{}).Where("environment_id = ? AND id = ?", envID, id).Count(&n).Error
	return n > 0, err
}

// APIKeyEnvironment returns the environment of the key id (ErrNotFound when
// there is no such key).
func (r Reader) APIKeyEnvironment(ctx context.Context, id string) (string, error) {
	var envs []string
	if err := r.q(ctx).Model(&APIKey{}).Where("id = ?", id).Limit(1).Pluck("environment_id", &envs).Error; err != nil {
		return "", interpretError(err)
	}
	if len(envs) == 0 {
		return "", ErrNotFound
	}
	return envs[0], nil
}

// LoadAPIKey reads a key of an environment (ErrNotFound when there is none).
func (r Reader) LoadAPIKey(ctx context.Context, envID, id string) (*APIKey, error) {
	var row APIKey
	if err := r.q(ctx).Where("environment_id = ? AND id = ?", envID, id).Take(&row).Error; err != nil {
		return nil, interpretError(err)
	}
	return &row, nil
}

// APIKeyOwners reads the owners of the keys ids of an environment, by key
// id; a key without owner, or that does not exist, is absent.
func (r Reader) APIKeyOwners(ctx context.Context, envID string, ids []string) (map[string]*string, error) {
	out := map[string]*string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []APIKey
	if err := r.q(ctx).Select("id", "owner").Where("environment_id = ? AND id IN ? AND owner IS NOT NULL", envID, ids).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	for _, k := range rows {
		out[k.ID] = k.Owner
	}
	return out, nil
}
