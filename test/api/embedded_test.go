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

// TestEmbeddedApplyRetriedAfterAWriteInsideItsTransaction: on SQLite an
// apply holds no lock until it writes, so another write commits while the
// apply waits in its transaction; the apply's first write then fails, and
// the service runs the apply again under the write lock and answers 200.
// (TestApplyRetriesAForcedSerializationConflict is PostgreSQL's.)
func TestEmbeddedApplyRetriedAfterAWriteInsideItsTransaction(t *testing.T) {
	t.Parallel()
	if !apitest.Embedded() {
		t.Skip("SQLite's retry: runs on the embedded backend")
	}
	var retries atomic.Int32
	var once sync.Once
	var k *applyEnv
	k = newApplyEnv(t, apitest.Options{DB: configdb.Options{
		OnTxRetry: func() { retries.Add(1) },
		BeforeApplyWrite: func(*gorm.DB) error {
			var err error
			once.Do(func() {
				err = k.e.GormDB().Exec(`UPDATE environments SET generation = generation + 1 WHERE id = ?`, k.e.EnvID).Error
			})
			return err
		},
	}})
	id := k.planID(envSettings("Renamed"), false)
	r := k.apply(id, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("apply: %d %s", r.Status, r.Body)
	}
	if retries.Load() < 1 {
		t.Errorf("the apply was not retried")
	}
	var gen int64
	k.e.GormDB().Raw(`SELECT generation FROM environments WHERE id = ?`, k.e.EnvID).Scan(&gen)
	if gen != 2 {
		t.Errorf("environment generation = %d, want 2 (the test's update and the apply's)", gen)
	}
	_, versions := k.e.Export()
	if versions["environment_settings/default"] != 2.0 {
		t.Errorf("versions = %v, want environment_settings/default at 2 (written once)", versions)
	}
}

// The two tests below are the replica tests' twins on one instance, so that
// they run on the embedded backend too: concurrency inside one process.

// TestConcurrentAppliesOfOnePlanOnOneInstanceApplyOnce: 30 concurrent
// applies of one plan: one 200, the others 409 config_plan_not_applicable;
// one revision, one config.applied entry.
func TestConcurrentAppliesOfOnePlanOnOneInstanceApplyOnce(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed()
	id := k.planID(`{"connections": {"corp": `+databaseConnection("Corp")+`}, `+envSettings("Renamed")[1:], false)

	const n = 30
	answers := make([]*apitest.Response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i] = k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply"})
		})
	}
	close(start)
	wg.Wait()
	assertAppliedOnce(t, k, id, answers)
}

// TestConcurrentAppliesOfDifferentPlansOnOneInstanceAllLand: eight plans of
// one environment, each of another type, applied at once: every apply
// succeeds and every write lands once.
func TestConcurrentAppliesOfDifferentPlansOnOneInstanceAllLand(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	docs := oneDocPerType()
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = k.planID(d, false)
	}
	answers := make([]*apitest.Response, len(ids))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, id := range ids {
		wg.Go(func() {
			<-start
			answers[i] = k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply"})
		})
	}
	close(start)
	wg.Wait()
	assertEveryTypeApplied(t, k, docs, answers)
	var gen int64
	k.e.GormDB().Raw(`SELECT generation FROM environments WHERE id = ?`, k.e.EnvID).Scan(&gen)
	if gen != int64(len(ids)) {
		t.Errorf("environment generation = %d, want %d (one per apply)", gen, len(ids))
	}
}
