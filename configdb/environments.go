package configdb

import "context"

// CreateEnvironment inserts an environment with its first resources (the
// singletons) and the generation 1 of each of kinds.
func (tx *Tx) CreateEnvironment(ctx context.Context, env *Environment, resources []Resource, kinds []string) error {
	env.CreatedAt = tx.Now
	if err := tx.q(ctx).Create(env).Error; err != nil {
		return err
	}
	for _, r := range resources {
		r.EnvironmentID, r.CreatedAt, r.UpdatedAt = env.ID, tx.Now, tx.Now
		if err := tx.q(ctx).Create(&r).Error; err != nil {
			return err
		}
	}
	for _, k := range kinds {
		if err := tx.q(ctx).Create(&TypeState{EnvironmentID: env.ID, Kind: k, Generation: 1}).Error; err != nil {
			return err
		}
	}
	return nil
}

// EnvironmentExists reports whether the environment id exists.
func (r Reader) EnvironmentExists(ctx context.Context, id string) (bool, error) {
	var n int64
	if err := r.q(ctx).Model(&Environment{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return false, interpretError(err)
	}
	return n > 0, nil
}

// EnvironmentIDs returns up to limit environment ids after after, in id
// order.
func (r Reader) EnvironmentIDs(ctx context.Context, after string, limit int) ([]string, error) {
	var ids []string
	err := r.q(ctx).Model(&Environment{}).Where("id > ?", after).Order("id").Limit(limit).Pluck("id", &ids).Error
	return ids, interpretError(err)
}

// FindEnvironment returns the oldest environment named name (ErrNotFound
// when there is none).
func (r Reader) FindEnvironment(ctx context.Context, name string) (Environment, error) {
	var env Environment
	err := r.q(ctx).Where("name = ?", name).Order("id").Take(&env).Error
	return env, interpretError(err)
}
