package configdb_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/configdb"
)

// TestLoadPlanReadsItsChangesAsStoredWhateverTheirSize: the plan read back
// is the plan stored, its changes byte for byte (json, escapes and all)
// from none to several MiB, and so is every other column; another
// environment's plan, or none, is ErrNotFound.
func TestLoadPlanReadsItsChangesAsStoredWhateverTheirSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, now := testEnvironment(t)
	db := configdb.New(d.DB, func() time.Time { return now }, configdb.Options{})
	// changes of n elements, each with a spec of about size bytes, with
	// escapes and characters beyond ASCII that must come back as they were.
	changes := func(n, size int) configdb.JSON {
		var b strings.Builder
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"action":"update","key":"big-%05d","kind":"api","spec":{"description":"%s \"é\" \\u00e9 ✓","n":[%d,{"x":null}]}}`,
				i, strings.Repeat("d", size), i)
		}
		b.WriteByte(']')
		return configdb.JSON(b.String())
	}
	empty := configdb.JSON(`[]`)
	revision, fingerprint := "rev_a", "fp_a"
	for _, c := range []struct {
		id      string
		changes configdb.JSON
	}{
		{"cfgp_empty", empty},
		{"cfgp_small", changes(3, 100)},
		{"cfgp_large", changes(700, 2000)}, // about 1.5 MiB
		{"cfgp_one_large", changes(1, 3<<20)},
	} {
		row := &configdb.PlanRow{EnvironmentID: "env_a", ID: c.id, Status: "planned", Prune: true, Types: configdb.JSON(`["api"]`), TypeSet: "api",
			ReferencingTypes: empty, Warnings: configdb.JSON(`[{"code":"w"}]`), RequiredSecrets: empty, RequiresSPHost: true,
			Summary: configdb.JSON(`{"update":1}`), Versions: configdb.JSON(`{"api":1}`), Fingerprints: configdb.JSON(`{}`),
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), RevisionID: &revision, CreatedBy: "key_a", IdempotencyFingerprint: &fingerprint,
			Moved: configdb.JSON(`[]`), Changes: c.changes}
		ev := configdb.PlanEventRow{EnvironmentID: "env_a", PlanID: c.id, ID: "evt_" + c.id, Type: "plan_created", APIKeyID: "key_a",
			RequestID: "req_" + c.id, Data: configdb.JSON(`{}`)}
		if err := db.CreatePlan(ctx, now, row, ev); err != nil {
			t.Fatalf("%s: CreatePlan: %v", c.id, err)
		}
		got, err := db.LoadPlan(ctx, configdb.PlanKey{EnvironmentID: "env_a", ID: c.id})
		if err != nil {
			t.Fatalf("%s: LoadPlan: %v", c.id, err)
		}
		if string(got.Changes) != string(c.changes) {
			t.Errorf("%s: changes read back differ from those stored (%d bytes read, %d stored)", c.id, len(got.Changes), len(c.changes))
		}
		// jsonb columns come back in PostgreSQL's spacing: compare them as
		// the stored values normalised the same way.
		want := *row
		want.Changes = got.Changes
		want.ChangesBytes = int64(len(c.changes)) // read with the row on PostgreSQL
		for _, f := range []*configdb.JSON{&want.Types, &want.ReferencingTypes, &want.Warnings, &want.RequiredSecrets, &want.Summary,
			&want.Versions, &want.Fingerprints, &want.Moved} {
			var norm string
			if err := d.DB.Raw("SELECT ?::jsonb::text", string(*f)).Scan(&norm).Error; err != nil {
				t.Fatal(err)
			}
			*f = configdb.JSON(norm)
		}
		got.CreatedAt, got.ExpiresAt = got.CreatedAt.UTC(), got.ExpiresAt.UTC()
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("%s: read back\n%+v\nwant\n%+v", c.id, *got, want)
		}
	}
	if _, err := db.LoadPlan(ctx, configdb.PlanKey{EnvironmentID: "env_a", ID: "cfgp_none"}); !errors.Is(err, configdb.ErrNotFound) {
		t.Errorf("LoadPlan of no plan: %v, want ErrNotFound", err)
	}
	if _, err := db.LoadPlan(ctx, configdb.PlanKey{EnvironmentID: "env_b", ID: "cfgp_large"}); !errors.Is(err, configdb.ErrNotFound) {
		t.Errorf("LoadPlan of another environment's plan: %v, want ErrNotFound", err)
	}
}

// TestPlanReadsCarryChangesOverAPieceApart: on PostgreSQL a list of plans
// reads with each row changes of at most 2 MiB less 4 KiB (changesWhole),
// and of a larger plan only their size, whichever of its two statements
// reads the page; CompleteChanges (ReadChanges, in pieces) then gives the
// changes byte for byte, characters beyond ASCII cut at a piece's end
// included. A plan gone since is ErrNotFound.
func TestPlanReadsCarryChangesOverAPieceApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, now := testEnvironment(t)
	db := configdb.New(d.DB, func() time.Time { return now }, configdb.Options{})
	changes := multibyteChanges
	stored := map[string]configdb.JSON{
		"cfgp_a_small": changes(1000),
		"cfgp_b_piece": changes(1<<20 - 4<<10 - 2),
		"cfgp_c_large": changes(3<<20 + 7),
		"cfgp_d_whole": changes(1<<20 + 1),     // over a piece, read with its row
		"cfgp_e_whole": changes(2<<20 - 4<<10), // the most read with its row
		"cfgp_f_large": changes(2<<20 - 4<<10 + 1),
	}
	for id, c := range stored {
		row := &configdb.PlanRow{EnvironmentID: "env_a", ID: id, Status: "planned", Types: configdb.JSON(`["api"]`), TypeSet: "api",
			ReferencingTypes: configdb.JSON(`[]`), Warnings: configdb.JSON(`[]`), RequiredSecrets: configdb.JSON(`[]`),
			Summary: configdb.JSON(`{}`), Versions: configdb.JSON(`{}`), Fingerprints: configdb.JSON(`{}`),
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), CreatedBy: "key_a", Changes: c}
		ev := configdb.PlanEventRow{EnvironmentID: "env_a", PlanID: id, ID: "evt_" + id, Type: "plan_created", APIKeyID: "key_a", Data: configdb.JSON(`{}`)}
		if err := db.CreatePlan(ctx, now, row, ev); err != nil {
			t.Fatalf("%s: CreatePlan: %v", id, err)
		}
	}
	for _, f := range []configdb.PlanFilter{
		{EnvironmentID: "env_a", Limit: 10, Now: now, AllTypeSets: true},                 // one statement over the table
		{EnvironmentID: "env_a", Limit: 10, Now: now, TypeSets: []string{"api", "role"}}, // one per set and status
	} {
		rows, err := db.ListPlans(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(stored) {
			t.Fatalf("ListPlans(all %v) read %d plans, want %d", f.AllTypeSets, len(rows), len(stored))
		}
		for i := range rows {
			row := &rows[i]
			want := stored[row.ID]
			if row.ChangesBytes != int64(len(want)) {
				t.Errorf("all %v: %s: changes_bytes %d, want %d", f.AllTypeSets, row.ID, row.ChangesBytes, len(want))
			}
			large := len(want) > 2<<20-4<<10
			if row.Complete() == large {
				t.Errorf("all %v: %s (%d bytes): read with its changes: %v, want %v", f.AllTypeSets, row.ID, len(want), row.Complete(), !large)
			}
			if !large && string(row.Changes) != string(want) {
				t.Errorf("all %v: %s: changes read with the row differ from those stored", f.AllTypeSets, row.ID)
			}
			if err := db.CompleteChanges(ctx, row); err != nil {
				t.Fatalf("all %v: %s: CompleteChanges: %v", f.AllTypeSets, row.ID, err)
			}
			if string(row.Changes) != string(want) {
				t.Errorf("all %v: %s: changes read in pieces differ from those stored (%d bytes, %d stored)", f.AllTypeSets, row.ID, len(row.Changes), len(want))
			}
		}
	}
	if err := d.DB.Exec("DELETE FROM config_plans WHERE id = 'cfgp_c_large'").Error; err != nil {
		t.Fatal(err)
	}
	if _, err := db.ReadChanges(ctx, configdb.PlanKey{EnvironmentID: "env_a", ID: "cfgp_c_large"}, 3<<20+7); !errors.Is(err, configdb.ErrNotFound) {
		t.Errorf("ReadChanges of a deleted plan: %v, want ErrNotFound", err)
	}
}
