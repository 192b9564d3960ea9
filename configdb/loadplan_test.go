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
