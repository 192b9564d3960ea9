package api_test

import (
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/apitest"
)

// waitForLockWaiter waits until a backend of the test's database waits for
// a lock while running a statement that contains query (a fragment such as
// "FOR UPDATE"), and reports whether one did in time.
func (k *applyEnv) waitForLockWaiter(query string, timeout time.Duration) bool {
	k.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var n int64
		err := k.e.DB.DB.Raw(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ?`, "%"+query+"%").Scan(&n).Error
		if err != nil {
			k.t.Errorf("pg_stat_activity: %v", err)
			return false
		}
		if n > 0 {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// environmentLock matches the apply's statement that locks the
// environment's row.
const environmentLock = `"environments"%FOR`

// TestApplyExactlyOnceAcrossReplicas: 30 concurrent applies of one plan
// over two instances: one 200, the others 409 config_plan_not_applicable
// (applying or applied); one revision, one config.applied entry.
func TestApplyExactlyOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	replica := apitest.Setup(t, apitest.Options{Replica: k.e})
	k.seed()
	id := k.planID(`{"connections": {"corp": `+databaseConnection("Corp")+`}, `+envSettings("Renamed")[1:], false)

	const n = 30
	answers := make([]*apitest.Response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		e := k.e
		if i%2 == 1 {
			e = replica
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply"})
		}()
	}
	close(start)
	wg.Wait()

	assertAppliedOnce(t, k, id, answers)
}

// assertAppliedOnce checks the answers of concurrent applies of plan id:
// exactly one 200, the others 409 config_plan_not_applicable (applying or
// applied); one revision, one config.applied entry, one history.
func assertAppliedOnce(t *testing.T, k *applyEnv, id string, answers []*apitest.Response) {
	t.Helper()
	ok := 0
	for _, r := range answers {
		switch {
		case r.Status == http.StatusOK:
			ok++
		case r.Status == http.StatusConflict && r.Code() == "config_plan_not_applicable":
			if s := r.JSON()["plan_status"]; s != "applying" && s != "applied" {
				t.Errorf("plan_status = %v", s)
			}
		default:
			t.Errorf("unexpected answer %d %s", r.Status, r.Body)
		}
	}
	if ok != 1 {
		t.Errorf("%d applies succeeded, want exactly 1", ok)
	}
	if c := k.count("config_revisions", "plan_id = ?", id); c != 1 {
		t.Errorf("%d revisions, want 1", c)
	}
	if c := k.count("management_logs", "plan_id = ? AND type = 'config.applied'", id); c != 1 {
		t.Errorf("%d config.applied entries, want 1", c)
	}
	if c := k.count("management_logs", "plan_id = ?", id); c != 3 {
		t.Errorf("%d log entries of the plan, want 3", c)
	}
	if got := eventTypes(k.events(id)); !slices.Equal(got, []string{"plan_created", "apply_started", "apply_succeeded"}) {
		t.Errorf("events = %v", got)
	}
	_, versions := k.e.Export()
	if versions["connection/corp"] != 1.0 || versions["environment_settings/default"] != 2.0 {
		t.Errorf("versions = %v", versions)
	}
}

// TestApplyDifferentPlansConcurrently applies eight plans of one
// environment, each of another type, from two instances at once: every
// apply succeeds and every write lands. The first apply to hold the
// environment's lock waits until another one is blocked on it, so at least
// one serialization failure is retried inside the service.
func TestApplyDifferentPlansConcurrently(t *testing.T) {
	t.Parallel()
	var retries atomic.Int32
	var k *applyEnv
	var once sync.Once
	dbOpts := configdb.Options{
		OnTxRetry: func() { retries.Add(1) },
		BeforeApplyWrite: func(*gorm.DB) error {
			once.Do(func() {
				if !k.waitForLockWaiter(environmentLock, 30*time.Second) {
					k.t.Errorf("no apply waited for the environment's lock")
				}
			})
			return nil
		},
	}
	k = newApplyEnv(t, apitest.Options{DB: dbOpts})
	replica := apitest.Setup(t, apitest.Options{Replica: k.e, DB: dbOpts})
	docs := oneDocPerType()
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = k.planID(d, false)
	}
	answers := make([]*apitest.Response, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		e := k.e
		if i%2 == 1 {
			e = replica
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply"})
		}()
	}
	wg.Wait()
	assertEveryTypeApplied(t, k, docs, answers)
	if n := retries.Load(); n < 1 {
		t.Errorf("no transaction was retried")
	} else {
		t.Logf("%d transaction retries", n)
	}
}

// TestApplyRetriesAForcedSerializationConflict: an apply that waits for
// the environment's row while another transaction updates it fails to
// serialize once that transaction commits; the service runs it again and
// answers 200.
func TestApplyRetriesAForcedSerializationConflict(t *testing.T) {
	t.Parallel()
	var retries atomic.Int32
	k := newApplyEnv(t, apitest.Options{DB: configdb.Options{OnTxRetry: func() { retries.Add(1) }}})
	k.e.RequirePostgres() // row locks; TestEmbeddedApplyRetriedAfterAWriteInsideItsTransaction is SQLite's
	id := k.planID(envSettings("Renamed"), false)

	// FOR NO KEY UPDATE, the lock an UPDATE of the row takes: a FOR UPDATE
	// lock would also hold back the foreign-key checks of the claim (its
	// event row references the environment), so the apply would wait before
	// its transaction starts rather than inside it.
	tx := k.e.DB.DB.Begin()
	if err := tx.Exec(`SELECT id FROM environments WHERE id = ? FOR NO KEY UPDATE`, k.e.EnvID).Error; err != nil {
		t.Fatal(err)
	}
	if err := tx.Exec(`UPDATE environments SET generation = generation + 1 WHERE id = ?`, k.e.EnvID).Error; err != nil {
		t.Fatal(err)
	}
	done := make(chan *apitest.Response, 1)
	go func() { done <- k.apply(id, nil) }()
	if !k.waitForLockWaiter(environmentLock, 30*time.Second) {
		tx.Rollback()
		t.Fatal("the apply never waited for the environment's lock")
	}
	if err := tx.Commit().Error; err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Status != http.StatusOK {
		t.Fatalf("apply: %d %s", r.Status, r.Body)
	}
	if retries.Load() < 1 {
		t.Errorf("the serialization failure was not retried")
	}
	var gen int64
	k.e.DB.DB.Raw(`SELECT generation FROM environments WHERE id = ?`, k.e.EnvID).Scan(&gen)
	if gen != 2 {
		t.Errorf("environment generation = %d, want 2 (the test's update and the apply's)", gen)
	}
}

// TestApplyingPlanWhoseProcessDiedReturnsToPlanned: a plan left applying by
// a dead process answers 409 (applying) until its lease passes; then it is
// planned again and can be applied.
func TestApplyingPlanWhoseProcessDiedReturnsToPlanned(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	id := k.planID(envSettings("Renamed"), false)
	k.exec(`UPDATE config_plans SET status = 'applying', lease_token = 'x', lease_until = ? WHERE id = ?`,
		k.e.Clock.Now().Add(60*time.Second), id)
	before := k.snapshot()
	r := k.apply(id, nil)
	assertProblem(t, r, 409, "config_plan_not_applicable", nil)
	if s := r.JSON()["plan_status"]; s != "applying" {
		t.Errorf("plan_status = %v, want applying", s)
	}
	k.assertUnchanged(before)
	if s := k.planStatus(id); s != "applying" {
		t.Errorf("status = %q, want applying", s)
	}

	k.e.Clock.Advance(61 * time.Second)
	if s := k.planStatus(id); s != "planned" {
		t.Errorf("status after the lease = %q, want planned", s)
	}
	res := k.mustApply(id, nil)
	if res["status"] != "applied" {
		t.Errorf("status = %v", res["status"])
	}
	if c := k.count("config_plans", "id = ? AND lease_token = '' AND lease_until IS NULL", id); c != 1 {
		t.Errorf("the applied plan keeps a lease")
	}
	_, versions := k.e.Export()
	if versions["environment_settings/default"] != 2.0 {
		t.Errorf("versions = %v", versions)
	}
}

// TestPlanCreationDoesNotWaitForARunningApply: while an apply holds the
// environment's lock, plans of that environment can still be created
// (their rows reference the environment).
func TestPlanCreationDoesNotWaitForARunningApply(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	holding := make(chan struct{})
	var once sync.Once
	k := newApplyEnv(t, apitest.Options{DB: configdb.Options{BeforeApplyWrite: func(*gorm.DB) error {
		once.Do(func() { close(holding); <-release })
		return nil
	}}})
	id := k.planID(envSettings("Renamed"), false)
	applied := make(chan *apitest.Response, 1)
	go func() { applied <- k.apply(id, nil) }()
	<-holding

	createdPlan := make(chan *apitest.Response, 1)
	go func() {
		createdPlan <- k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans",
			Body: map[string]any{"config": k.doc(`{"branding": {"primary_color": "#000000"}}`)}})
	}()
	var r *apitest.Response
	waited := false
	for r == nil && !waited {
		select {
		case r = <-createdPlan:
		case <-time.After(20 * time.Millisecond):
			var n int64
			k.e.DB.DB.Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
				AND wait_event_type = 'Lock' AND query LIKE '%config_plans%'`).Scan(&n)
			waited = n > 0
		}
	}
	close(release)
	if waited {
		t.Error("plan creation waits for the running apply's lock on the environment")
		r = <-createdPlan
	}
	if r.Status != http.StatusCreated {
		t.Errorf("plan creation: %d %s", r.Status, r.Body)
	}
	if a := <-applied; a.Status != http.StatusOK {
		t.Errorf("apply: %d %s", a.Status, a.Body)
	}
}

// oneDocPerType is eight documents, each of another type, that apply
// independently of one another.
func oneDocPerType() []string {
	return []string{
		envSettings("Renamed"),
		`{"identity_settings": {"allowed_identifiers": ["email", "username"], "mfa": "optional",
			"password_policy": {"min_length": 8, "require_digits": false, "require_symbols": false}}}`,
		`{"attack_protection": {"brute_force": {"enabled": true, "max_attempts": 5},
			"breached_password_detection": {"enabled": true}, "bot_detection": "low"}}`,
		`{"branding": {"primary_color": "#000000"}}`,
		`{"apis": {"orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders", "token_lifetime_seconds": 60}}}`,
		`{"connections": {"corp": ` + databaseConnection("Corp") + `}}`,
		`{"roles": {"reader": {"display_name": "Reader"}}}`,
		`{"applications": {"portal": {"display_name": "Portal", "type": "spa"}}}`,
	}
}

// assertEveryTypeApplied checks that every apply of oneDocPerType answered
// 200 and that every write landed once.
func assertEveryTypeApplied(t *testing.T, k *applyEnv, docs []string, answers []*apitest.Response) {
	t.Helper()
	for i, r := range answers {
		if r.Status != http.StatusOK {
			t.Errorf("apply of %s: %d %s", docs[i], r.Status, r.Body)
		}
	}
	_, versions := k.e.Export()
	for _, ref := range []string{"environment_settings/default", "identity_settings/default", "attack_protection/default", "branding/default"} {
		if versions[ref] != 2.0 {
			t.Errorf("version of %s = %v, want 2", ref, versions[ref])
		}
	}
	for _, ref := range []string{"api/orders", "connection/corp", "role/reader", "application/portal"} {
		if versions[ref] != 1.0 {
			t.Errorf("version of %s = %v, want 1", ref, versions[ref])
		}
	}
	if c := k.count("config_revisions", ""); c != int64(len(docs)) {
		t.Errorf("%d revisions, want %d", c, len(docs))
	}
}

// TestApplyWithoutMaterialClaimsThePlanInItsTransaction: on PostgreSQL a
// plan that writes no OIDC material is claimed by the apply's own
// transaction. Held inside it, the plan is still planned for readers and
// has no apply_started event yet; a concurrent apply of the plan, on
// another replica, is answered at once (409 applying) instead of waiting
// for it. Once it commits, the history holds the whole apply.
func TestApplyWithoutMaterialClaimsThePlanInItsTransaction(t *testing.T) {
	t.Parallel()
	if apitest.Backend() == apitest.BackendEmbedded {
		t.Skip("SQLite has no row locks: every plan is claimed by a statement of its own first")
	}
	dbOpts, entered, release := idemSlowApply()
	k := newApplyEnv(t, apitest.Options{DB: dbOpts})
	defer release()
	replica := apitest.Setup(t, apitest.Options{Replica: k.e})
	id := k.planID(envSettings("Held"), false)
	done := make(chan *apitest.Response, 1)
	go func() { done <- k.e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply"}) }()
	<-entered

	if s := k.planStatus(id); s != "planned" {
		t.Errorf("stored status during the apply = %q, want planned (nothing committed yet)", s)
	}
	if got := eventTypes(k.events(id)); !slices.Equal(got, []string{"plan_created"}) {
		t.Errorf("events during the apply = %v", got)
	}
	r := replica.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply"})
	if r.Status != http.StatusConflict || r.Code() != "config_plan_not_applicable" || r.JSON()["plan_status"] != "applying" {
		t.Errorf("concurrent apply: %d %s", r.Status, r.Body)
	}

	release()
	if first := <-done; first.Status != http.StatusOK || first.JSON()["status"] != "applied" {
		t.Fatalf("apply: %d %s", first.Status, first.Body)
	}
	if got := eventTypes(k.events(id)); !slices.Equal(got, []string{"plan_created", "apply_started", "apply_succeeded"}) {
		t.Errorf("events = %v", got)
	}
	r = replica.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply"})
	if r.Status != http.StatusConflict || r.Code() != "config_plan_not_applicable" || r.JSON()["plan_status"] != "applied" {
		t.Errorf("apply after the apply: %d %s", r.Status, r.Body)
	}
}
