package configdb_test

import (
	"context"
	"database/sql"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/revisions"
	"github.com/keenauth/configplans/test/testdb"
)

// TestCreatePlanLeavesNoChangesHeldByItsConnection: pgx keeps the slices
// of a statement's parameters in an array of its connection after the
// statement, until a later statement overwrites each slot; a plan's
// changes sent as a parameter (up to LargeParameter) would stay reachable
// from a connection idle in the pool. CreatePlan lets go of them: after
// it, and a statement of one parameter on the same (only) connection, the
// live heap is within 1 MiB of what it was before. Not parallel: the
// live heap is the process's.
func TestCreatePlanLeavesNoChangesHeldByItsConnection(t *testing.T) {
	ctx := context.Background()
	d, db, now := oneConnection(t)
	create := func(id string, size int) {
		t.Helper()
		empty := configdb.JSON(`[]`)
		row := &configdb.PlanRow{EnvironmentID: "env_a", ID: id, Status: "planned", Types: configdb.JSON(`["api"]`), TypeSet: "api",
			ReferencingTypes: empty, Warnings: empty, RequiredSecrets: empty, Summary: configdb.JSON(`{}`), Versions: configdb.JSON(`{}`),
			Fingerprints: configdb.JSON(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour), CreatedBy: "key_a",
			Changes: configdb.JSON(`["` + strings.Repeat("x", size) + `"]`)}
		ev := configdb.PlanEventRow{EnvironmentID: "env_a", PlanID: id, ID: "evt_" + id, Type: "plan_created", APIKeyID: "key_a", Data: configdb.JSON(`{}`)}
		if err := db.CreatePlan(ctx, now, row, ev); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	create("cfgp_small", 100) // the connection and its statements exist
	var n int
	if err := d.DB.Raw("SELECT ?::int", 1).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	before := liveHeap()
	const size = 3 << 20
	if size > configdb.LargeParameter {
		t.Fatalf("%d bytes of changes would not be a parameter", size)
	}
	create("cfgp_large", size)
	if err := d.DB.Raw("SELECT ?::int", 1).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if after := liveHeap(); after > before+1<<20 {
		t.Errorf("the live heap grew by %d KiB after a plan of %d bytes of changes: its connection holds them", (after-before)>>10, size)
	}
}

// TestRecordApplyOutcomeLeavesNoRevisionHeldByItsConnection: the same for
// a revision's resources sent as the record's parameter.
func TestRecordApplyOutcomeLeavesNoRevisionHeldByItsConnection(t *testing.T) {
	ctx := context.Background()
	d, db, now := oneConnection(t)
	record := func(id string, size int) {
		t.Helper()
		err := db.InTx(ctx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
			_, _, err := tx.RecordApplyOutcome(ctx, configdb.ApplyRecord{EnvironmentID: "env_a", Keep: 50,
				Revision: &revisions.Revision{EnvironmentID: "env_a", ID: id, PlanID: "cfgp_none", Types: []string{"api"},
					CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
				Resources: []byte(`["` + strings.Repeat("x", size) + `"]`), Plan: configdb.PlanKey{EnvironmentID: "env_a", ID: "cfgp_none"}, Token: "t"})
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	record("rev_small", 100)
	var n int
	if err := d.DB.Raw("SELECT ?::int", 1).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	before := liveHeap()
	const size = 3 << 20
	record("rev_large", size)
	if err := d.DB.Raw("SELECT ?::int", 1).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if after := liveHeap(); after > before+1<<20 {
		t.Errorf("the live heap grew by %d KiB after a revision of %d bytes: its connection holds it", (after-before)>>10, size)
	}
}

// oneConnection is testEnvironment with a pool of one connection: every
// statement runs on the connection the one before it used.
func oneConnection(t *testing.T) (*testdb.Database, *configdb.DB, time.Time) {
	t.Helper()
	d, now := testEnvironment(t)
	sqlDB, err := d.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(1)
	return d, configdb.New(d.DB, func() time.Time { return now }, configdb.Options{}), now
}

// liveHeap is the heap in use after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
