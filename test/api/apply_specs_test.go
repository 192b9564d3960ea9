package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gorm.io/gorm"

	"github.com/keenauth/configplans/config/displayname"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/apitest"
)

// TestApplyWritesTheSpecsOfItsStoredPlan: on PostgreSQL an apply whose
// specs are over 1 MiB takes them from the plan's stored changes, in the
// statements that write them, instead of sending the plan's specs again;
// a smaller one sends them. The test changes the stored plan inside the
// apply's transaction, just before its writes: over 1 MiB, what is written
// is the stored plan's, for the create and for the update.
func TestApplyWritesTheSpecsOfItsStoredPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		large int // large apis added to the plan
		want  string
	}{{"small", 0, "As planned"}, {"over 1 MiB", 130, "As stored"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var planID string
			k := newApplyEnv(t, apitest.Options{DB: configdb.Options{
				BeforeApplyWrite: func(tx *gorm.DB) error {
					return tx.Exec(`UPDATE config_plans SET changes = replace(changes::text, 'As planned', 'As stored')::json WHERE id = ?`, planID).Error
				},
			}})
			k.e.RequirePostgres()
			doc := k.doc(`{"environment_settings": {"display_name": "As planned", "default_locale": "en", "session_lifetime_hours": 168},
				"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "As planned orders",
					"scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600}}}`)
			apis := doc["apis"].(map[string]any)
			for i := range tc.large {
				var scopes []any
				for j := range 40 {
					scopes = append(scopes, map[string]any{"value": fmt.Sprintf("scope:%d", j), "description": strings.Repeat("d", 200)})
				}
				apis[fmt.Sprintf("large-%03d", i)] = map[string]any{"identifier": fmt.Sprintf("https://api.shop.example/large-%d", i),
					"display_name": fmt.Sprintf("Large %d", i), "scopes": scopes, "token_lifetime_seconds": 3600}
			}
			planID = k.e.Plan(doc, false)["id"].(string)
			if r := k.apply(planID, nil); r.Status != http.StatusOK {
				t.Fatalf("apply: %d %s", r.Status, r.Body)
			}
			cfg, _ := k.e.Export()
			settings, _ := cfg["environment_settings"].(map[string]any)
			orders, _ := cfg["apis"].(map[string]any)["orders"].(map[string]any)
			if settings["display_name"] != tc.want || orders["display_name"] != tc.want+" orders" {
				t.Errorf("written display names %q and %q, want %q and %q", settings["display_name"], orders["display_name"], tc.want, tc.want+" orders")
			}
		})
	}
}

// TestLoadResourcesReadsAResourceOnce: a resource the selection names by
// its key and by its unique value (as an apply names its own resources) is
// read once, so that its spec is not held twice.
func TestLoadResourcesReadsAResourceOnce(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	db := configdb.New(k.e.GormDB(), time.Now, configdb.Options{})
	rows, err := db.LoadResources(context.Background(), k.e.EnvID, configdb.Selection{
		Keys:   [][2]string{{"api", "orders"}, {"connection", "db-main"}},
		Unique: map[string]map[string][]string{"api": {"identifier": {"https://api.shop.example/orders"}}, "connection": {"display_name": {displayname.Key("Main DB")}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Kind+"/"+r.Key)
	}
	if len(got) != 2 {
		t.Errorf("read %v, want api/orders and connection/db-main once each", got)
	}
}

// TestARevisionOverAPieceKeepsTheSpecsItReplaced: a revision whose former
// specs take over 4 MiB (encoded and sent to the transaction in pieces of
// 1 MiB on PostgreSQL) holds every resource the apply changed, in the
// plan's order, with the spec and version it had, characters beyond ASCII
// included.
func TestARevisionOverAPieceKeepsTheSpecsItReplaced(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	const n = 450 // about 10 KB of spec each
	apis := func(version string) map[string]any {
		m := map[string]any{}
		for i := range n {
			var scopes []any
			for j := range 40 {
				scopes = append(scopes, map[string]any{"value": fmt.Sprintf("scope:%d", j), "description": "é ✓ " + strings.Repeat("d", 200)})
			}
			m[fmt.Sprintf("large-%03d", i)] = map[string]any{"identifier": fmt.Sprintf("https://api.shop.example/large-%d", i),
				"display_name": fmt.Sprintf("Large %d %s", i, version), "scopes": scopes, "token_lifetime_seconds": 3600}
		}
		return map[string]any{"apis": m}
	}
	k.mustApply(k.e.Plan(apis("v1"), false)["id"].(string), nil)
	before, versions := k.e.Export()
	plan := k.e.Plan(apis("v2"), false)
	res := k.mustApply(plan["id"].(string), nil)
	rev := k.get("/v1/config-revisions/" + res["revision_id"].(string))
	resources, _ := rev["resources"].([]any)
	changes, _ := plan["changes"].([]any)
	if len(resources) != n || len(changes) != n {
		t.Fatalf("%d resources in the revision, %d changes, want %d", len(resources), len(changes), n)
	}
	specs := 0
	for _, r := range resources {
		specs += len(encodeJSON(t, r.(map[string]any)["spec_before"]))
	}
	if specs <= 4<<20 {
		t.Fatalf("the revision's specs take %d bytes, not over 4 MiB: it was not sent in pieces", specs)
	}
	for i, r := range resources {
		r := r.(map[string]any)
		key := changes[i].(map[string]any)["key"]
		if r["key"] != key || r["action"] != "update" {
			t.Errorf("resource %d: %v %v, want the update of %v", i, r["action"], r["key"], key)
			continue
		}
		if diff := cmp.Diff(before["apis"].(map[string]any)[key.(string)], r["spec_before"]); diff != "" {
			t.Errorf("%s: spec_before (-was +recorded):\n%s", key, diff)
		}
		if want := versions["api/"+key.(string)]; r["version_before"] != want {
			t.Errorf("%s: version_before %v, want %v", key, r["version_before"], want)
		}
	}
}
