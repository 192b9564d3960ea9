package plans

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/keenauth/configplans/configdb"
)

// Retention is the sweep that keeps the stored history within its bounds:
// the revisions past the limit or the maximum age, and the plans past
// their retention with their events.
type Retention struct{ core }

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
func (s *Retention) Sweep(ctx context.Context, sc SweepConfig) (SweepResult, error) {
	if sc.Batch <= 0 {
		sc.Batch = 500
	}
	var res SweepResult
	after := ""
	for {
		envs, err := s.db.EnvironmentIDs(ctx, after, sweepEnvironmentPage)
		if err != nil {
			return res, err
		}
		for _, env := range envs {
			if err := s.sweepEnvironment(ctx, env, sc, &res); err != nil {
				return res, fmt.Errorf("sweep %s: %w", env, err)
			}
		}
		if len(envs) < sweepEnvironmentPage {
			return res, nil
		}
		after = envs[len(envs)-1]
	}
}

func (s *Retention) sweepEnvironment(ctx context.Context, env string, sc SweepConfig, res *SweepResult) error {
	for {
		n, err := s.db.PruneRevisionBatch(ctx, env, s.cfg.RevisionLimit, sc.Batch)
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
		var plans, events int
		err := s.db.InTx(ctx, sql.LevelDefault, func(tx *configdb.Tx) error {
			var err error
			plans, events, err = tx.DeleteFinishedPlans(ctx, env, cutoff, sc.Batch)
			return err
		})
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

// PruneRevisions deletes, in every environment, the revisions past the
// limit or the maximum age: the sweep (sweep.go) without plan retention.
func (s *Retention) PruneRevisions(ctx context.Context) (int, error) {
	res, err := s.Sweep(ctx, SweepConfig{})
	return res.Revisions, err
}
