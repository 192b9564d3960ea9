package configdb

import (
	"context"
)

// planHeadColumns are the columns of a plan that an announcement of one of
// its events shows: never its changes (specs and diffs), which can be
// 10 MiB.
var planHeadColumns = []string{"environment_id", "id", "status", "summary", "created_at", "expires_at",
	"revision_id", "created_by", "created_by_owner", "warnings"}

// PlanHeads reads the heads of the plans ids of an environment (every
// column but the changes and the versions), by id; a plan that no longer
// exists is absent.
func (r Reader) PlanHeads(ctx context.Context, envID string, ids []string) (map[string]PlanRow, error) {
	out := map[string]PlanRow{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []PlanRow
	if err := r.q(ctx).Select(planHeadColumns).Where("environment_id = ? AND id IN ?", envID, ids).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	for _, p := range rows {
		out[p.ID] = p
	}
	return out, nil
}

// EventsOfTypes reads the events of the plans ids of an environment whose
// type is one of types, oldest first, by plan id.
func (r Reader) EventsOfTypes(ctx context.Context, envID string, ids, types []string) (map[string][]PlanEventRow, error) {
	out := map[string][]PlanEventRow{}
	if len(ids) == 0 || len(types) == 0 {
		return out, nil
	}
	var rows []PlanEventRow
	err := r.q(ctx).Select("plan_id", "id", "type", "created_at").
		Where("environment_id = ? AND plan_id IN ? AND type IN ?", envID, ids, types).Order("id").Find(&rows).Error
	if err != nil {
		return nil, interpretError(err)
	}
	for _, ev := range rows {
		out[ev.PlanID] = append(out[ev.PlanID], ev)
	}
	return out, nil
}
