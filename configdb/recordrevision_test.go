package configdb_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/revisions"
)

// TestRecordApplyOutcomeStoresTheRevisionsResourcesAsEncoded: the
// revision's resources are stored byte for byte, whether they go as the
// record's parameter (up to LargeParameter, 4 MiB) or before it in pieces
// through a setting of the transaction (over it, and only then), characters
// beyond ASCII cut at a piece's end included. After the transaction the
// setting holds nothing.
func TestRecordApplyOutcomeStoresTheRevisionsResourcesAsEncoded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, now := testEnvironment(t)
	db := configdb.New(d.DB, func() time.Time { return now }, configdb.Options{})
	// resources of about n bytes, an array of strings of "é✓" (5 bytes)
	// after an odd start, so that pieces of 1,044,480 bytes end inside a
	// character.
	resources := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`["x`)
		for b.Len() < n {
			b.WriteString("é✓")
			if b.Len()%100_000 < 5 {
				b.WriteString(`","`)
			}
		}
		b.WriteString(`"]`)
		return []byte(b.String())
	}
	for i, want := range [][]byte{resources(1000), resources(configdb.LargeParameter - 100), resources(configdb.LargeParameter + 1<<20 + 11)} {
		id := fmt.Sprintf("rev_%d", i)
		err := db.InTx(ctx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
			_, _, err := tx.RecordApplyOutcome(ctx, configdb.ApplyRecord{EnvironmentID: "env_a", Keep: 50,
				Revision: &revisions.Revision{EnvironmentID: "env_a", ID: id, PlanID: "cfgp_none", Types: []string{"api"},
					CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
				Resources: want, Plan: configdb.PlanKey{EnvironmentID: "env_a", ID: "cfgp_none"}, Token: "t"})
			if err != nil {
				return err
			}
			// Over LargeParameter the resources went through the setting, and
			// only then.
			return checkSentApart(ctx, t, tx, "keenauth.revision", id, want)
		})
		if err != nil {
			t.Fatalf("%s (%d bytes): %v", id, len(want), err)
		}
		var got string
		if err := d.DB.Raw("SELECT resources::text FROM config_revisions WHERE environment_id = 'env_a' AND id = ?", id).Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s: resources stored as %d bytes, want the %d encoded", id, len(got), len(want))
		}
	}
	// A transaction after them finds the setting empty.
	var held []string
	err := d.DB.Transaction(func(g *gorm.DB) error {
		return g.Raw("SELECT coalesce(current_setting('keenauth.revision', true), '')").Scan(&held).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range held {
		if h != "" {
			t.Errorf("the setting holds %d bytes after its transaction", len(h))
		}
	}
}

// TestInsertPlanSendsLargeChangesApart: a plan's changes over LargeParameter are
// stored byte for byte through a setting of the transaction (and only
// then), not as the INSERT's parameter; so are they on the pool
// (CreatePlan), in a transaction of their own.
func TestInsertPlanSendsLargeChangesApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, now := testEnvironment(t)
	db := configdb.New(d.DB, func() time.Time { return now }, configdb.Options{})
	changes := multibyteChanges
	plan := func(id string, c configdb.JSON) (*configdb.PlanRow, configdb.PlanEventRow) {
		empty := configdb.JSON(`[]`)
		return &configdb.PlanRow{EnvironmentID: "env_a", ID: id, Status: "planned", Types: configdb.JSON(`["api"]`), TypeSet: "api",
				ReferencingTypes: empty, Warnings: empty, RequiredSecrets: empty, Summary: configdb.JSON(`{}`), Versions: configdb.JSON(`{}`),
				Fingerprints: configdb.JSON(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour), CreatedBy: "key_a", Changes: c},
			configdb.PlanEventRow{EnvironmentID: "env_a", PlanID: id, ID: "evt_" + id, Type: "plan_created", APIKeyID: "key_a", Data: configdb.JSON(`{}`)}
	}
	stored := func(id string) string {
		var got string
		if err := d.DB.Raw("SELECT changes::text FROM config_plans WHERE environment_id = 'env_a' AND id = ?", id).Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		return got
	}
	for i, want := range []configdb.JSON{changes(1000), changes(configdb.LargeParameter - 100), changes(configdb.LargeParameter + 1<<20 + 11)} {
		id := fmt.Sprintf("cfgp_tx_%d", i)
		err := db.InTx(ctx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
			row, ev := plan(id, want)
			if err := tx.InsertPlan(ctx, row, ev); err != nil {
				return err
			}
			return checkSentApart(ctx, t, tx, "keenauth.changes", id, want)
		})
		if err != nil {
			t.Fatalf("%s (%d bytes): %v", id, len(want), err)
		}
		if got := stored(id); got != string(want) {
			t.Errorf("%s: changes stored as %d bytes, want the %d sent", id, len(got), len(want))
		}
		id = fmt.Sprintf("cfgp_pool_%d", i)
		row, ev := plan(id, want)
		if err := db.CreatePlan(ctx, now, row, ev); err != nil {
			t.Fatalf("%s: CreatePlan: %v", id, err)
		}
		if got := stored(id); got != string(want) {
			t.Errorf("%s: changes stored as %d bytes, want the %d sent", id, len(got), len(want))
		}
	}
}

// TestRecordApplyOutcomeStoresTheRevisionSentInPieces: resources sent by
// SendRevision, pieces of any size (over 1 MiB too, cut again between
// characters), are what the record stores with ResourcesSent.
func TestRecordApplyOutcomeStoresTheRevisionSentInPieces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, now := testEnvironment(t)
	db := configdb.New(d.DB, func() time.Time { return now }, configdb.Options{})
	var b strings.Builder
	b.WriteString(`["x`)
	for b.Len() < 3<<20 {
		b.WriteString("é✓")
	}
	b.WriteString(`"]`)
	want := b.String()
	err := db.InTx(ctx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
		sent := 0
		for _, end := range []int{1, 3, 100_003, 2<<20 + 3, len(want)} { // between characters, as EncodeInPieces ends its pieces between resources
			if err := tx.SendRevision(ctx, sent, []byte(want[sent:end])); err != nil {
				return err
			}
			sent = end
		}
		_, _, err := tx.RecordApplyOutcome(ctx, configdb.ApplyRecord{EnvironmentID: "env_a", Keep: 50,
			Revision: &revisions.Revision{EnvironmentID: "env_a", ID: "rev_sent", PlanID: "cfgp_none", Types: []string{"api"},
				CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
			ResourcesSent: true, Plan: configdb.PlanKey{EnvironmentID: "env_a", ID: "cfgp_none"}, Token: "t"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := d.DB.Raw("SELECT resources::text FROM config_revisions WHERE environment_id = 'env_a' AND id = 'rev_sent'").Scan(&got).Error; err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("resources stored as %d bytes, want the %d sent", len(got), len(want))
	}
}
