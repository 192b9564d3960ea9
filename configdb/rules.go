package configdb

import "context"

// EnvironmentName reads the name of an environment, which the guardrail
// rules see (ErrNotFound when there is none).
func (r Reader) EnvironmentName(ctx context.Context, id string) (string, error) {
	var env Environment
	err := r.q(ctx).Select("id", "name").Where("id = ?", id).Take(&env).Error
	return env.Name, interpretError(err)
}
