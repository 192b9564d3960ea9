package api_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/apitest"
)

// TestApplyWhoseLastWriteMissesItsVersionRunsAgain: on PostgreSQL the
// apply's last resource write is part of its record's statement; when it
// finds its resource no longer at the planned version (here moved inside
// the apply's own transaction, just before its writes), the record is
// rolled back with it and the apply runs again: 200, one write, one
// revision, one config.applied entry.
func TestApplyWhoseLastWriteMissesItsVersionRunsAgain(t *testing.T) {
	t.Parallel()
	var retries atomic.Int32
	var once sync.Once
	var k *applyEnv
	k = newApplyEnv(t, apitest.Options{DB: configdb.Options{
		OnTxRetry: func() { retries.Add(1) },
		BeforeApplyWrite: func(tx *gorm.DB) error {
			var err error
			once.Do(func() {
				err = tx.Exec(`UPDATE resources SET version = version + 1 WHERE environment_id = ? AND kind = 'environment_settings'`, k.e.EnvID).Error
			})
			return err
		},
	}})
	k.e.RequirePostgres()
	id := k.planID(envSettings("Renamed"), false)
	r := k.apply(id, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("apply: %d %s", r.Status, r.Body)
	}
	if retries.Load() < 1 {
		t.Errorf("the apply was not run again")
	}
	if c := k.count("config_revisions", "plan_id = ?", id); c != 1 {
		t.Errorf("%d revisions, want 1", c)
	}
	if c := k.count("management_logs", "plan_id = ? AND type = 'config.applied'", id); c != 1 {
		t.Errorf("%d config.applied entries, want 1", c)
	}
	if got := eventTypes(k.events(id)); len(got) != 3 || got[2] != "apply_succeeded" {
		t.Errorf("events = %v", got)
	}
	_, versions := k.e.Export()
	if versions["environment_settings/default"] != 2.0 {
		t.Errorf("versions = %v, want environment_settings/default at 2 (written once)", versions)
	}
}
