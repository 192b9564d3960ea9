package configdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

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

// Head is what planning or applying reads of an environment besides its
// resources.
type Head struct {
	// Generations are those of the kinds asked for.
	Generations map[string]int64
	// Policies are the environment's (nil when it has none).
	Policies JSON
	// EnvironmentName is the environment's name, which the guardrail rules
	// read, when it has policies ("" otherwise).
	EnvironmentName string
	// Material is, per connection id, the hash of the confirmed OIDC
	// material (ConfirmedMaterial), when asked for.
	Material map[string]string
	// Claimable reports, when LockForApply was given a plan to claim,
	// whether that plan can be claimed (see ClaimPlan): it is then locked
	// until the transaction ends.
	Claimable bool
	// Approvals are, when LockForApply was given a plan to review, that
	// plan's approvals, oldest first (as Approvals reads them).
	Approvals []ApprovalRow
}

// LockForApply locks the environment as LockEnvironment does and reads the
// generations of kinds, the environment's policies and the resources sel
// names (as LoadResources): on PostgreSQL in the same statement, one round
// trip instead of four. Under REPEATABLE READ every part reads the
// transaction's snapshot, taken as the statement starts, whatever the
// order PostgreSQL evaluates them in; a lock that waited for another
// apply's commit fails the statement with a serialization error, as
// LockEnvironment does. An environment that does not exist is
// gorm.ErrRecordNotFound, as with LockEnvironment. The table is named as
// GORM names it ("environments" ... FOR), so that the lock reads as the
// same statement in pg_stat_activity.
//
// With claim, the apply claims that plan in its own transaction
// (PostgreSQL only): the statement first locks the plan's row, if the plan
// can be claimed (Head.Claimable), and only then the environment's. The
// plan's lock does not wait: a plan that another apply's transaction holds
// is ErrPlanBusy at once, as a claimed plan is "being applied"; that
// transaction also holds an advisory lock named by its Idempotency-Key
// fingerprint, which ApplyingWithKey tests. Every apply takes the two locks
// in that order, and nothing that holds an environment's lock waits for
// another plan's row, so the order cannot deadlock.
//
// With review, it also reads the approvals of that plan (Head.Approvals),
// in the same statement on PostgreSQL: the transaction's snapshot, as a
// read after the statement would see it.
func (tx *Tx) LockForApply(ctx context.Context, envID string, kinds []string, sel Selection, claim *Claim, review *PlanKey) (Head, []Resource, error) {
	if claim != nil && tx.sqlite {
		return Head{}, nil, errors.New("an apply's transaction claims its plan on PostgreSQL only")
	}
	return tx.readHead(ctx, envID, kinds, sel, true, claim, review)
}

// Claim is the plan that an apply's transaction claims (LockForApply),
// and the Idempotency-Key fingerprint of its request ("": none).
type Claim struct {
	Plan        PlanKey
	Fingerprint string
}

// ApplyingWithKey reports whether an apply's transaction that claims its
// plan is running for the Idempotency-Key request of fingerprint: it
// holds the advisory lock of the fingerprint (LockForApply), which this
// read cannot take. Taken, the lock is given back as the read ends.
func (d *DB) ApplyingWithKey(ctx context.Context, fingerprint string) (bool, error) {
	var free bool
	err := d.q(ctx).Raw("SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))", applyKeyLock+fingerprint).Row().Scan(&free)
	return !free, interpretError(err)
}

// applyKeyLock prefixes the name of an apply's advisory lock.
const applyKeyLock = "keenauth apply "

// PlanHead reads the generations of kinds, the confirmed OIDC material,
// the policies and the resources sel names that planning needs, on
// PostgreSQL in one statement.
func (tx *Tx) PlanHead(ctx context.Context, envID string, kinds []string, sel Selection) (Head, []Resource, error) {
	return tx.readHead(ctx, envID, kinds, sel, false, nil, nil)
}

// readHead is LockForApply (forApply) or PlanHead. The head is a row of
// its own beside the resources' rows (a full join on false), so that its
// values are not repeated on every resource.
func (tx *Tx) readHead(ctx context.Context, envID string, kinds []string, sel Selection, forApply bool, claim *Claim, review *PlanKey) (Head, []Resource, error) {
	if tx.sqlite {
		return tx.readHeadEach(ctx, envID, kinds, sel, forApply, review)
	}
	if kinds == nil {
		kinds = []string{} // a JSON array, not null
	}
	qs, err := tx.resourceQueries(envID, sel)
	if err != nil {
		return Head{}, nil, err
	}
	sql, args := tx.headQuery(envID, kinds, forApply, claim, review)
	if len(qs) > 0 {
		sql += ` SELECT h.*, r.* FROM (` + qs[0].sql + `) AS r FULL JOIN h ON false`
		args = append(args, qs[0].args...)
		qs = qs[1:]
	} else {
		sql += ` SELECT h.* FROM h`
	}
	var rows []struct {
		Head            bool
		Locked          int
		Claimable       bool
		Generations     JSON
		Policies        JSON
		EnvironmentName *string
		Material        JSON
		Approvals       JSON
		Resource        `gorm:"embedded"`
	}
	if err := scanRaw(tx.q(ctx).Raw(sql, args...), &rows); err != nil {
		return Head{}, nil, err
	}
	head, resources := -1, make([]Resource, 0, len(rows))
	for i, r := range rows {
		if r.Head {
			head = i
		} else {
			resources = append(resources, r.Resource)
		}
	}
	if head < 0 {
		return Head{}, nil, fmt.Errorf("the head of environment %s: no row", envID)
	}
	row := rows[head]
	if forApply && row.Locked == 0 {
		return Head{}, nil, gorm.ErrRecordNotFound
	}
	more, err := tx.runResourceQueries(ctx, qs)
	if err != nil {
		return Head{}, nil, err
	}
	resources = append(resources, more...)
	h := Head{Generations: map[string]int64{}, Policies: row.Policies, Claimable: row.Claimable}
	if row.EnvironmentName != nil {
		h.EnvironmentName = *row.EnvironmentName
	}
	if review != nil {
		if h.Approvals, err = approvalRows(*review, row.Approvals); err != nil {
			return Head{}, nil, err
		}
	}
	if row.Generations != nil {
		if err := json.Unmarshal(row.Generations, &h.Generations); err != nil {
			return Head{}, nil, err
		}
	}
	if !forApply {
		h.Material = map[string]string{}
		if row.Material != nil {
			if err := json.Unmarshal(row.Material, &h.Material); err != nil {
				return Head{}, nil, err
			}
		}
	}
	return h, resources, nil
}

// headQuery is the WITH part of readHead's statement: the head's CTE h,
// after the locks of an apply (l, and c for a claim) or with the confirmed
// material of a plan; with review, also the approvals of that plan.
func (tx *Tx) headQuery(envID string, kinds []string, forApply bool, claim *Claim, review *PlanKey) (sql string, args []any) {
	sql = `h AS (SELECT true AS head, (SELECT jsonb_object_agg(kind, generation) FROM type_states
				WHERE environment_id = ? AND kind IN (SELECT jsonb_array_elements_text(?::jsonb))) AS generations,
			(SELECT policies FROM environment_policies WHERE environment_id = ?) AS policies,
			(SELECT name FROM "environments" WHERE id = ? AND EXISTS (SELECT FROM environment_policies WHERE environment_id = ?)) AS environment_name`
	args = []any{envID, mustRecords(kinds), envID, envID, envID}
	if review != nil {
		sql += `, ` + approvalsJSON("?", "?") + ` AS approvals`
		args = append(args, review.EnvironmentID, review.ID)
	}
	if forApply {
		lock, lockArgs := `WITH l AS (SELECT id FROM "environments" WHERE id = ? FOR NO KEY UPDATE), `, []any{envID}
		claimed := "false"
		if claim != nil {
			// The environment's row is read once the plan's is locked: the
			// condition on c is an InitPlan of l's scan, run before l's
			// row is locked.
			q, env, id := claim.Plan.where()
			lock = `WITH c AS (SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0)) FROM config_plans WHERE ` + q + ` AND ` + claimable +
				` FOR NO KEY UPDATE NOWAIT), l AS (SELECT id FROM "environments" WHERE id = ? AND (SELECT count(*) FROM c) >= 0 FOR NO KEY UPDATE), `
			lockArgs = []any{applyKeyLock + claim.Fingerprint, env, id, tx.Now, tx.Now, envID}
			claimed = "(SELECT count(*) > 0 FROM c)"
		}
		sql = lock + sql + `, (SELECT count(*) FROM l) AS locked, ` + claimed + ` AS claimable)`
		args = append(lockArgs, args...)
	} else {
		sql = `WITH ` + sql + `, (SELECT jsonb_object_agg(connection_id, material_hash) FROM connection_materials WHERE environment_id = ?) AS material)`
		args = append(args, envID)
	}
	return sql, args
}

// readHeadEach is readHead one statement at a time, for SQLite.
func (tx *Tx) readHeadEach(ctx context.Context, envID string, kinds []string, sel Selection, forApply bool, review *PlanKey) (head Head, resources []Resource, err error) {
	if forApply {
		if _, err := tx.LockEnvironment(ctx, envID); err != nil {
			return Head{}, nil, err
		}
	}
	if resources, err = tx.LoadResources(ctx, envID, sel); err != nil {
		return Head{}, nil, err
	}
	if head.Generations, err = tx.LoadGenerations(ctx, envID, kinds); err != nil {
		return Head{}, nil, err
	}
	if !forApply {
		if head.Material, err = tx.ConfirmedMaterial(ctx, envID); err != nil {
			return Head{}, nil, err
		}
	}
	if head.Policies, err = tx.LoadPolicies(ctx, envID); err != nil {
		return Head{}, nil, err
	}
	if head.Policies != nil {
		if head.EnvironmentName, err = tx.EnvironmentName(ctx, envID); err != nil {
			return Head{}, nil, err
		}
	}
	if review != nil {
		byPlan, err := tx.Approvals(ctx, review.EnvironmentID, []string{review.ID})
		if err != nil {
			return Head{}, nil, err
		}
		head.Approvals = byPlan[review.ID]
	}
	return head, resources, nil
}
