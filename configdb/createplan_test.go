package configdb_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/testdb"
)

// TestCreatePlanRunsAgainAfterALostStatementAndFindsItsPlan: CreatePlan
// stores a plan in one statement without a transaction, so a connection
// lost with that statement in flight leaves its outcome unknown. Cut
// before the server saw it, the statement runs again and stores the plan;
// cut after, the statement runs again and finds the plan it stored under
// the same id. Either way one plan with one event, and no error. A plan
// already under the id on the first attempt is not the caller's: an error.
// The same holds for a plan over LargeParameter, whose statement runs in a
// transaction after its changes were sent in pieces (sendSetting): its
// changes are stored whole.
func TestCreatePlanRunsAgainAfterALostStatementAndFindsItsPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, now := testEnvironment(t)
	// Each case has a handle of its own, a proxy of its own.
	through := func() (*configdb.DB, *testdb.Proxy) {
		proxied, proxy := d.Through(t, 0)
		return configdb.New(proxied.DB, func() time.Time { return now }, configdb.Options{}), proxy
	}
	large := configdb.JSON(`["` + strings.Repeat("x", configdb.LargeParameter+1<<19) + `"]`)
	plan := func(id string) (*configdb.PlanRow, configdb.PlanEventRow) {
		empty := configdb.JSON(`[]`)
		changes := empty
		if strings.Contains(id, "large") {
			changes = large
		}
		row := &configdb.PlanRow{EnvironmentID: "env_a", ID: id, Status: "planned", Types: configdb.JSON(`["api"]`), TypeSet: "api",
			ReferencingTypes: empty, Warnings: empty, RequiredSecrets: empty, Summary: configdb.JSON(`{}`), Versions: configdb.JSON(`{}`),
			Fingerprints: configdb.JSON(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour), CreatedBy: "key_a", Changes: changes}
		ev := configdb.PlanEventRow{EnvironmentID: "env_a", PlanID: id, ID: "evt_" + id, Type: "plan_created", APIKeyID: "key_a",
			RequestID: "req_" + id, Data: configdb.JSON(`{}`)}
		return row, ev
	}
	count := func(q string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := d.DB.Raw(q, args...).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		id     string
		before bool
	}{{"cfgp_before", true}, {"cfgp_after", false}, {"cfgp_large_before", true}, {"cfgp_large_after", false}} {
		db, proxy := through()
		// The cut is armed on the plan's id, which only the statement's
		// parameters carry: pgx sends them apart from its text, which it
		// prepares first, and runs the statement with them.
		proxy.CutOn([]byte(c.id), c.before)
		row, ev := plan(c.id)
		if err := db.CreatePlan(ctx, now, row, ev); err != nil {
			t.Fatalf("%s: CreatePlan: %v", c.id, err)
		}
		if proxy.Cuts() != 1 {
			t.Fatalf("%s: the armed cut did not happen", c.id)
		}
		if n := count("SELECT count(*) FROM config_plans WHERE id = ?", c.id); n != 1 {
			t.Errorf("%s: %d plans, want 1", c.id, n)
		}
		if n := count("SELECT count(*) FROM plan_events WHERE plan_id = ?", c.id); n != 1 {
			t.Errorf("%s: %d events, want 1", c.id, n)
		}
		if n, want := count("SELECT octet_length(changes::text) FROM config_plans WHERE id = ?", c.id), int64(len(row.Changes)); n != want {
			t.Errorf("%s: changes of %d bytes stored, want %d", c.id, n, want)
		}
	}
	db, _ := through()
	row, ev := plan("cfgp_after")
	ev.ID = "evt_other"
	if err := db.CreatePlan(ctx, now, row, ev); err == nil {
		t.Error("CreatePlan of an id already taken succeeded")
	}
	if n := count("SELECT count(*) FROM plan_events WHERE plan_id = ?", "cfgp_after"); n != 1 {
		t.Errorf("%d events after a refused CreatePlan, want 1", n)
	}
}
