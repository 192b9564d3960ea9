package configdb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/migrations"
	"github.com/keenauth/configplans/test/testdb"
)

// TestLoadReviewedPlanReadsWhatItsThreeReadsRead holds the one statement
// of LoadReviewedPlan (PostgreSQL) and its SQLite reads to LoadPlan,
// Approvals and LoadPolicies, and the approvals LockForApply reads with
// its locks to Approvals: a plan without approvals in an environment
// without policies, and plans with approvals (owners or none, comments
// with escapes, times to the microsecond, two at the same time ordered by
// key) under policies, beside another environment's approvals of a plan of
// the same id; no plan is ErrNotFound. LoadReviewedPlanHead reads the same
// but the changes, on PostgreSQL.
func TestLoadReviewedPlanReadsWhatItsThreeReadsRead(t *testing.T) {
	t.Parallel()
	sqlite := func(t *testing.T) *gorm.DB {
		db := openSQLite(t)
		if _, err := migrations.UpSQLite(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		return db
	}
	for name, open := range map[string]func(*testing.T) *gorm.DB{
		"postgres": func(t *testing.T) *gorm.DB { return testdb.New(t).DB },
		"sqlite":   sqlite,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			g := open(t)
			now := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
			clock := now
			db := configdb.New(g, func() time.Time { return clock }, configdb.Options{})
			for _, env := range []string{"env_a", "env_b"} {
				if err := g.Create(&configdb.Environment{ID: env, Name: env, CreatedAt: now}).Error; err != nil {
					t.Fatal(err)
				}
				for _, id := range []string{"cfgp_bare", "cfgp_reviewed"} {
					row := &configdb.PlanRow{EnvironmentID: env, ID: id, Status: "planned", Types: configdb.JSON(`["api"]`), TypeSet: "api",
						ReferencingTypes: configdb.JSON(`[]`), Warnings: configdb.JSON(`[]`), RequiredSecrets: configdb.JSON(`[]`),
						Summary: configdb.JSON(`{"update":1}`), Versions: configdb.JSON(`{"api/a":1}`), Fingerprints: configdb.JSON(`{}`),
						CreatedAt: now, ExpiresAt: now.Add(time.Hour), CreatedBy: "key_a",
						Changes: configdb.JSON(`[{"action":"update","key":"a","kind":"api","spec":{"d":"\"é\""}}]`)}
					ev := configdb.PlanEventRow{EnvironmentID: env, PlanID: id, ID: "evt_" + env + id, Type: "plan_created", APIKeyID: "key_a",
						RequestID: "req_" + env + id, Data: configdb.JSON(`{}`)}
					if err := db.CreatePlan(ctx, now, row, ev); err != nil {
						t.Fatal(err)
					}
				}
			}
			owner, comment := "alice", `fine "by me" – ✓`
			approvals := []struct {
				env, key string
				owner    *string
				comment  *string
				at       time.Duration
			}{
				{"env_a", "key_c", &owner, &comment, 3 * time.Microsecond},
				{"env_a", "key_b", nil, nil, 3 * time.Microsecond},
				{"env_a", "key_a", nil, &comment, 7 * time.Second},
				{"env_b", "key_z", nil, nil, 0},
			}
			for _, a := range approvals {
				clock = now.Add(a.at)
				err := db.InTx(ctx, sql.LevelDefault, func(tx *configdb.Tx) error {
					_, err := tx.AddApproval(ctx, configdb.ApprovalRow{EnvironmentID: a.env, PlanID: "cfgp_reviewed", APIKeyID: a.key,
						Owner: a.owner, Comment: a.comment})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := db.InTx(ctx, sql.LevelDefault, func(tx *configdb.Tx) error {
				return tx.PutPolicies(ctx, "env_b", configdb.JSON(`{"required_approvals":2}`))
			}); err != nil {
				t.Fatal(err)
			}
			for _, k := range []configdb.PlanKey{{"env_a", "cfgp_bare"}, {"env_a", "cfgp_reviewed"}, {"env_b", "cfgp_bare"}, {"env_b", "cfgp_reviewed"}} {
				got, err := db.LoadReviewedPlan(ctx, k)
				if err != nil {
					t.Fatalf("%v: %v", k, err)
				}
				plan, err := db.LoadPlan(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				byPlan, err := db.Approvals(ctx, k.EnvironmentID, []string{k.ID})
				if err != nil {
					t.Fatal(err)
				}
				policies, err := db.LoadPolicies(ctx, k.EnvironmentID)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Plan, plan) {
					t.Errorf("%v: plan\n%+v\nwant\n%+v", k, got.Plan, plan)
				}
				// The head read is the same but for the changes, which
				// PostgreSQL leaves out (their size is read); SQLite reads
				// them.
				head, err := db.LoadReviewedPlanHead(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				wantHead := *plan
				if name == "postgres" {
					wantHead.Changes = nil
					if head.Plan.ChangesBytes != int64(len(plan.Changes)) || head.Plan.Complete() {
						t.Errorf("%v: head read with changes_bytes %d, complete %v; want %d, incomplete", k, head.Plan.ChangesBytes,
							head.Plan.Complete(), len(plan.Changes))
					}
				}
				if !reflect.DeepEqual(head.Plan, &wantHead) || string(head.Policies) != string(policies) {
					t.Errorf("%v: head\n%+v\nwant\n%+v", k, head.Plan, &wantHead)
				}
				sameApprovals(t, fmt.Sprint("LoadReviewedPlanHead ", k), head.Approvals, byPlan[k.ID])
				if string(got.Policies) != string(policies) {
					t.Errorf("%v: policies %s, want %s", k, got.Policies, policies)
				}
				want := byPlan[k.ID]
				sameApprovals(t, fmt.Sprint("LoadReviewedPlan ", k), got.Approvals, want)
				// An apply's transaction reads them with its locks.
				err = db.InTx(ctx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
					head, _, err := tx.LockForApply(ctx, k.EnvironmentID, []string{"api"}, configdb.Selection{}, nil, &k)
					if err == nil {
						sameApprovals(t, fmt.Sprint("LockForApply ", k), head.Approvals, want)
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// The order is the approvals' time, then their key.
			got, _ := db.LoadReviewedPlan(ctx, configdb.PlanKey{EnvironmentID: "env_a", ID: "cfgp_reviewed"})
			var keys []string
			for _, a := range got.Approvals {
				keys = append(keys, a.APIKeyID)
			}
			if want := []string{"key_b", "key_c", "key_a"}; !reflect.DeepEqual(keys, want) {
				t.Errorf("approvals in the order %v, want %v", keys, want)
			}
			if _, err := db.LoadReviewedPlan(ctx, configdb.PlanKey{EnvironmentID: "env_a", ID: "cfgp_none"}); !errors.Is(err, configdb.ErrNotFound) {
				t.Errorf("no plan: %v, want ErrNotFound", err)
			}
		})
	}
}

// sameApprovals fails the test unless got are want: the same rows, their
// times the same instants.
func sameApprovals(t *testing.T, what string, got, want []configdb.ApprovalRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d approvals, want %d", what, len(got), len(want))
		return
	}
	for i, a := range got {
		w := want[i]
		if !a.ApprovedAt.Equal(w.ApprovedAt) {
			t.Errorf("%s: approval %d at %v, want %v", what, i, a.ApprovedAt, w.ApprovedAt)
		}
		a.ApprovedAt, w.ApprovedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(a, w) {
			t.Errorf("%s: approval %d\n%+v\nwant\n%+v", what, i, a, w)
		}
	}
}
