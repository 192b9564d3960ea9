package api_test

import (
	"net/http"
	"testing"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// TestApplyWritesTheSpecsOfItsStoredPlan: on PostgreSQL the apply's
// creates and updates take their specs from the plan's stored changes, in
// the statement that writes them, instead of sending the plan's specs
// again. The test changes the stored plan inside the apply's transaction,
// just before its writes: what is written is the stored plan's, for the
// create and for the update.
func TestApplyWritesTheSpecsOfItsStoredPlan(t *testing.T) {
	t.Parallel()
	var k *applyEnv
	var planID string
	k = newApplyEnv(t, apitest.Options{Hooks: plans.Hooks{
		BeforeApplyWrite: func(tx *gorm.DB) error {
			return tx.Exec(`UPDATE config_plans SET changes = replace(changes::text, 'As planned', 'As stored')::json WHERE id = ?`, planID).Error
		},
	}})
	k.e.RequirePostgres()
	planID = k.planID(`{"environment_settings": {"display_name": "As planned", "default_locale": "en", "session_lifetime_hours": 168},
		"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "As planned orders",
			"scopes": [{"value": "read:orders"}], "token_lifetime_seconds": 3600}}}`, false)
	if r := k.apply(planID, nil); r.Status != http.StatusOK {
		t.Fatalf("apply: %d %s", r.Status, r.Body)
	}
	cfg, _ := k.e.Export()
	settings, _ := cfg["environment_settings"].(map[string]any)
	apis, _ := cfg["apis"].(map[string]any)
	orders, _ := apis["orders"].(map[string]any)
	if settings["display_name"] != "As stored" || orders["display_name"] != "As stored orders" {
		t.Errorf("written display names %q and %q, want those of the stored plan (As stored, As stored orders)", settings["display_name"], orders["display_name"])
	}
}
