package plans

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/revisions"
)

// SweepConfig is what one sweep deletes, and in which steps.
type SweepConfig struct {
	// PlanRetention: plans that are neither planned nor applying (an expired
	// one included), and their events, are deleted this long after their
	// creation. 0 keeps every plan.
	PlanRetention time.Duration
	// Batch bounds the rows one statement deletes (default 500).
	Batch int
}

// SweepResult counts what a sweep deleted.
type SweepResult struct {
	Revisions  int
	Plans      int
	PlanEvents int
}

// sweepEnvironmentPage is how many environment ids a sweep reads at a time.
const sweepEnvironmentPage = 200

// Sweep deletes, environment by environment and in bounded batches, the
// revisions past the limit or the maximum age (§7) and the plans past their
// retention (§16). Every delete names its environment (Citus-ready); the
// environments are walked in id order, so a sweep cut short resumes from
// the start next time without harm.
func (s *Service) Sweep(ctx context.Context, sc SweepConfig) (SweepResult, error) {
	if sc.Batch <= 0 {
		sc.Batch = 500
	}
	var res SweepResult
	after := ""
	for {
		var envs []string
		err := s.db.WithContext(ctx).Model(&Environment{}).Where("id > ?", after).Order("id").Limit(sweepEnvironmentPage).Pluck("id", &envs).Error
		if err != nil {
			return res, interpretError(err)
		}
		for _, env := range envs {
			if err := s.sweepEnvironment(ctx, env, sc, &res); err != nil {
				return res, fmt.Errorf("sweep %s: %w", env, interpretError(err))
			}
		}
		if len(envs) < sweepEnvironmentPage {
			return res, nil
		}
		after = envs[len(envs)-1]
	}
}

func (s *Service) sweepEnvironment(ctx context.Context, env string, sc SweepConfig, res *SweepResult) error {
	for {
		n, err := revisions.PruneBatch(ctx, s.db, env, s.cfg.RevisionLimit, s.now(), sc.Batch)
		if err != nil {
			return err
		}
		res.Revisions += n
		if n > 0 && s.hooks.OnRevisionsPruned != nil {
			s.hooks.OnRevisionsPruned(n)
		}
		if n < sc.Batch {
			break
		}
	}
	if sc.PlanRetention <= 0 {
		return nil
	}
	cutoff := s.now().Add(-sc.PlanRetention)
	for {
		plans, events, err := s.deletePlanBatch(ctx, env, cutoff, sc.Batch)
		if err != nil {
			return err
		}
		res.Plans += plans
		res.PlanEvents += events
		if plans < sc.Batch {
			return nil
		}
	}
}

// deletePlanBatch deletes up to limit plans of env created before cutoff
// that can no longer change (applied, conflicted, expired — a planned plan
// past its validity is expired), with their events, in one transaction.
func (s *Service) deletePlanBatch(ctx context.Context, env string, cutoff time.Time, limit int) (plans, events int, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ids []string
		err := tx.Model(&planRow{}).Where("environment_id = ? AND created_at < ?", env, cutoff).
			Where("status NOT IN (?, ?) OR (status = ? AND expires_at <= ?)", StatusPlanned, StatusApplying, StatusPlanned, s.now()).
			Order("id").Limit(limit).Pluck("id", &ids).Error
		if err != nil || len(ids) == 0 {
			return err
		}
		r := tx.Exec("DELETE FROM plan_events WHERE environment_id = ? AND plan_id IN ?", env, ids)
		if r.Error != nil {
			return r.Error
		}
		events = int(r.RowsAffected)
		r = tx.Exec("DELETE FROM config_plans WHERE environment_id = ? AND id IN ?", env, ids)
		plans = int(r.RowsAffected)
		return r.Error
	})
	return plans, events, err
}
