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
// and one plan, cfgp_a, of type api.
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

// TestFeedNeverSkipsAnEventCommittedAfterALaterOne is the hard case of the
// live stream's order on PostgreSQL: transaction B has the older
// transaction id but inserts its event after A has inserted E1, so E1 has
// the lower seq; B commits while A holds E1 uncommitted. A reader following
// seq would hand out E2, move its cursor past E1's seq and never see E1. The
// feed hands out E2 (once every older transaction of the cluster has ended)
// and, after A commits, E1 — nothing is skipped, nothing is repeated. And
// while A runs, an event A's transaction wrote is never read.
func TestFeedNeverSkipsAnEventCommittedAfterALaterOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	db := feedFixture(t, d)
	head, skip, err := db.FeedHead(ctx, "env_a")
	if err != nil {
		t.Fatal(err)
	}
	// evt_0 committed before the head: it is before it, or it is to be
	// skipped (when a transaction older than its own was still running).
	unseen := func(evs []configdb.FeedEvent) []configdb.FeedEvent {
		return slices.DeleteFunc(evs, func(e configdb.FeedEvent) bool { return slices.Contains(skip, e.ID) })
	}
	if got, err := db.FeedAfter(ctx, "env_a", head, 10); err != nil || len(unseen(got)) != 0 {
		t.Fatalf("FeedAfter(head) = %v, %v (skip %v); want nothing: evt_0 is before the head", ids(got), err, skip)
	}

	b := d.DB.Begin()
	defer b.Rollback()
	var bx string
	if err := b.Raw("SELECT pg_current_xact_id()::text").Scan(&bx).Error; err != nil { // B takes its id first
		t.Fatal(err)
	}
	a := d.DB.Begin()
	defer a.Rollback()
	insertEvent(t, a, "evt_1") // lower seq, younger transaction
	insertEvent(t, b, "evt_2")
	if err := b.Commit().Error; err != nil {
		t.Fatal(err)
	}

	// E2 is settled once every transaction older than A has ended (other
	// tests' transactions share the cluster): wait for it; E1 must never
	// come while A runs.
	pos := head
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := db.FeedAfter(ctx, "env_a", pos, 10)
		if err != nil {
			t.Fatal(err)
		}
		got = unseen(got)
		if slices.Contains(ids(got), "evt_1") {
			t.Fatalf("FeedAfter = %v while evt_1's transaction is uncommitted", ids(got))
		}
		if len(got) > 0 {
			if !slices.Equal(ids(got), []string{"evt_2"}) {
				t.Fatalf("FeedAfter = %v, want [evt_2]", ids(got))
			}
			pos = got[len(got)-1].Pos
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("evt_2, committed, was not read within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.Commit().Error; err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		got, err := db.FeedAfter(ctx, "env_a", pos, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 {
			if !slices.Equal(ids(got), []string{"evt_1"}) {
				t.Fatalf("after A's commit FeedAfter = %v, want [evt_1]", ids(got))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("evt_1, committed after evt_2, was skipped")
		}
		time.Sleep(20 * time.Millisecond)
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

// TestFeedOnSQLiteIsCommitOrder: with one writer, every committed event is
// settled, in the order of its insert; the head is past them.
func TestFeedOnSQLiteIsCommitOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := feedFixture(t, testdb.NewSQLite(t))
	head, skip, err := db.FeedHead(ctx, "env_a")
	if err != nil || len(skip) != 0 {
		t.Fatal(skip, err)
	}
	var told [][]string
	db.OnEventsCommitted(func(envIDs []string) { told = append(told, envIDs) })
	for _, id := range []string{"evt_1", "evt_2"} {
		if err := db.Write(ctx, func(tx *configdb.Tx) error { return tx.RecordEvent(ctx, feedEvent(id)) }); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.FeedAfter(ctx, "env_a", head, 10)
	if err != nil || !slices.Equal(ids(got), []string{"evt_1", "evt_2"}) {
		t.Fatalf("FeedAfter(head) = %v, %v; want [evt_1 evt_2]", ids(got), err)
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
// rolled back tells nothing.
func TestFeedTellsOfCommittedEventsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := feedFixture(t, testdb.New(t))
	var told [][]string
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
