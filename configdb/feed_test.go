package configdb_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/testdb"
)

// feedFixture is a database of the test's own with one environment, env_a,
// and one plan, cfgp_a, of type api, created with its event evt_0.
func feedFixture(t *testing.T, d *testdb.Database) *configdb.DB {
	t.Helper()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := d.DB.Create(&configdb.Environment{ID: "env_a", Name: "env_a", CreatedAt: now}).Error; err != nil {
		t.Fatal(err)
	}
	db := configdb.New(d.DB, nil, configdb.Options{})
	empty := configdb.JSON(`[]`)
	row := &configdb.PlanRow{EnvironmentID: "env_a", ID: "cfgp_a", Status: "planned", Types: configdb.JSON(`["api"]`), TypeSet: "api",
		ReferencingTypes: empty, Warnings: empty, RequiredSecrets: empty, Summary: configdb.JSON(`{}`), Versions: configdb.JSON(`{}`),
		Fingerprints: configdb.JSON(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour), CreatedBy: "key_a", Changes: empty}
	if err := db.CreatePlan(context.Background(), now, row, feedEvent("evt_0")); err != nil {
		t.Fatal(err)
	}
	return db
}

func feedEvent(id string) configdb.PlanEventRow {
	return configdb.PlanEventRow{EnvironmentID: "env_a", PlanID: "cfgp_a", ID: id, Type: "plan_approved", APIKeyID: "key_a",
		RequestID: "req_" + id, Data: configdb.JSON(`{}`)}
}

func insertEvent(t *testing.T, tx *gorm.DB, id string) {
	t.Helper()
	err := tx.Exec(`INSERT INTO plan_events (environment_id, plan_id, id, type, created_at, api_key_id, request_id, data)
		VALUES ('env_a', 'cfgp_a', ?, 'plan_approved', now(), 'key_a', 'req', '{}')`, id).Error
	if err != nil {
		t.Fatal(err)
	}
}

func ids(evs []configdb.FeedEvent) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

func feedAfter(t *testing.T, db *configdb.DB, pos configdb.FeedPosition) []configdb.FeedEvent {
	t.Helper()
	got, err := db.FeedAfter(context.Background(), "env_a", pos, 10)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestFeedNeverSkipsAnEventCommittedAfterALaterOne is the hard case of the
// live stream's order on PostgreSQL: transaction A inserts E1 first, B
// inserts E2 after it and commits while A holds E1 uncommitted. A reader
// following an order given at insert would hand out E2, move past E1's
// place and never see E1. The feed's order is given at commit: E2 comes
// first, then E1 once A commits, after it — nothing skipped, nothing
// repeated.
func TestFeedNeverSkipsAnEventCommittedAfterALaterOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	db := feedFixture(t, d)
	head, err := db.FeedHead(ctx, "env_a")
	if err != nil {
		t.Fatal(err)
	}
	if got := feedAfter(t, db, head); len(got) != 0 {
		t.Fatalf("FeedAfter(head) = %v; want nothing: evt_0 is before the head", ids(got))
	}

	a := d.DB.Begin()
	defer a.Rollback()
	b := d.DB.Begin()
	defer b.Rollback()
	insertEvent(t, a, "evt_1")
	insertEvent(t, b, "evt_2")
	if err := b.Commit().Error; err != nil {
		t.Fatal(err)
	}
	got := feedAfter(t, db, head)
	if !slices.Equal(ids(got), []string{"evt_2"}) {
		t.Fatalf("FeedAfter(head) = %v with evt_1 uncommitted, want [evt_2]", ids(got))
	}
	pos := got[0].Pos
	if err := a.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if got := feedAfter(t, db, pos); !slices.Equal(ids(got), []string{"evt_1"}) {
		t.Fatalf("after A's commit FeedAfter(evt_2) = %v, want [evt_1]", ids(got))
	}

	// Newest first, in the same order, for GET /v1/config-events.
	all, err := db.FeedBefore(ctx, "env_a", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"evt_1", "evt_2", "evt_0"}; !slices.Equal(ids(all), want) {
		t.Fatalf("FeedBefore(nil) = %v, want %v", ids(all), want)
	}
	older, err := db.FeedBefore(ctx, "env_a", &all[0].Pos, 10)
	if err != nil || !slices.Equal(ids(older), []string{"evt_2", "evt_0"}) {
		t.Fatalf("FeedBefore(evt_1) = %v, %v", ids(older), err)
	}
	if p, found, err := db.FeedPositionOf(ctx, "env_a", "evt_2"); err != nil || !found || p != older[0].Pos {
		t.Fatalf("FeedPositionOf(evt_2) = %v, %v, %v; want %v", p, found, err, older[0].Pos)
	}
	if _, found, err := db.FeedPositionOf(ctx, "env_a", "evt_none"); err != nil || found {
		t.Fatalf("FeedPositionOf(evt_none) found = %v, %v", found, err)
	}
}

// TestFeedCommitsOfAnEnvironmentTakeTheirPlaceInTurn: a commit carrying
// events waits, at COMMIT, for another commit of the same environment's
// events to end, so that their order is their commit order; another
// environment's commit does not wait.
func TestFeedCommitsOfAnEnvironmentTakeTheirPlaceInTurn(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	feedFixture(t, d)
	// A holds the environment's lock as its COMMIT would.
	a := d.DB.Begin()
	defer a.Rollback()
	if err := a.Exec("SELECT pg_advisory_xact_lock(7394202, hashtext('env_a'))").Error; err != nil {
		t.Fatal(err)
	}
	b := d.DB.Begin()
	defer b.Rollback()
	insertEvent(t, b, "evt_b")
	done := make(chan error, 1)
	go func() { done <- b.Commit().Error }()
	select {
	case err := <-done:
		t.Fatalf("B's commit ended (%v) while the environment's feed was locked", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := a.Commit().Error; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("B's commit did not end once the lock was free")
	}
}

// TestFeedOnSQLiteIsCommitOrder: with one writer, every committed event is
// in the order of its insert; the head is past them.
func TestFeedOnSQLiteIsCommitOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := feedFixture(t, testdb.NewSQLite(t))
	head, err := db.FeedHead(ctx, "env_a")
	if err != nil {
		t.Fatal(err)
	}
	var told [][]string
	db.OnEventsCommitted(func(envIDs []string) { told = append(told, envIDs) })
	for _, id := range []string{"evt_1", "evt_2"} {
		if err := db.Write(ctx, func(tx *configdb.Tx) error { return tx.RecordEvent(ctx, feedEvent(id)) }); err != nil {
			t.Fatal(err)
		}
	}
	if got := feedAfter(t, db, head); !slices.Equal(ids(got), []string{"evt_1", "evt_2"}) {
		t.Fatalf("FeedAfter(head) = %v; want [evt_1 evt_2]", ids(got))
	}
	if len(told) != 2 || !slices.Equal(told[0], []string{"env_a"}) {
		t.Fatalf("OnEventsCommitted was told %v, want env_a twice", told)
	}
	all, err := db.FeedBefore(ctx, "env_a", nil, 2)
	if err != nil || !slices.Equal(ids(all), []string{"evt_2", "evt_1"}) {
		t.Fatalf("FeedBefore(nil, 2) = %v, %v", ids(all), err)
	}
}

// TestFeedTellsOfCommittedEventsOnly: a transaction that wrote events and
// rolled back tells nothing; one that committed tells its environment.
func TestFeedTellsOfCommittedEventsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var told [][]string
	d := testdb.New(t)
	db := feedFixture(t, d)
	db.OnEventsCommitted(func(envIDs []string) { told = append(told, envIDs) })
	_ = db.Write(ctx, func(tx *configdb.Tx) error {
		if err := tx.RecordEvent(ctx, feedEvent("evt_r")); err != nil {
			return err
		}
		return context.Canceled
	})
	if len(told) != 0 {
		t.Fatalf("a rolled-back transaction told %v", told)
	}
	if err := db.Write(ctx, func(tx *configdb.Tx) error { return tx.RecordEvent(ctx, feedEvent("evt_c")) }); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || !slices.Equal(told[0], []string{"env_a"}) {
		t.Fatalf("told %v, want [[env_a]]", told)
	}
}
