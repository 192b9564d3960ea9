package api_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
	"github.com/keenauth/configplans/test/testdb"
)

// dbfSetup starts the API over a PostgreSQL database reached through a
// proxy that the test cuts; direct reads the same database around it.
// arm, when set, runs once: inside the first apply transaction, just before
// its writes (the fault each test arms is for that attempt alone).
func dbfSetup(t *testing.T, arm func(p *testdb.Proxy)) (e *apitest.Env, p *testdb.Proxy, direct *gorm.DB) {
	t.Helper()
	if arm == nil {
		return dbfSetupTx(t, nil)
	}
	var armed atomic.Bool
	return dbfSetupTx(t, func(p *testdb.Proxy, _ *gorm.DB) error {
		if !armed.Swap(true) {
			arm(p)
		}
		return nil
	})
}

// dbfSetupTx is dbfSetup whose arm also gets the apply's transaction.
func dbfSetupTx(t *testing.T, arm func(p *testdb.Proxy, tx *gorm.DB) error) (e *apitest.Env, p *testdb.Proxy, direct *gorm.DB) {
	t.Helper()
	if apitest.Embedded() {
		t.Skip("needs PostgreSQL/Redis: cuts the connections to PostgreSQL")
	}
	d := testdb.New(t)
	proxied, p := d.Through(t, 0)
	var dbOpts configdb.Options
	if arm != nil {
		dbOpts.BeforeApplyWrite = func(tx *gorm.DB) error { return arm(p, tx) }
	}
	e = apitest.Setup(t, apitest.Options{Database: proxied, DB: dbOpts})
	return e, p, d.DB
}

// dbfWant503 fails t unless r is 503 service_unavailable with Retry-After.
func dbfWant503(t *testing.T, what string, r *apitest.Response) {
	t.Helper()
	if r.Status != http.StatusServiceUnavailable || r.Code() != "service_unavailable" ||
		r.Header.Get("Retry-After") == "" || r.JSON()["retry_after"] == nil {
		t.Errorf("%s: %d %q Retry-After %q, want 503 service_unavailable with Retry-After: %s",
			what, r.Status, r.Code(), r.Header.Get("Retry-After"), r.Body)
	}
}

// dbfApplied fails t unless the plan is applied, with one revision and one
// config.applied entry, and the API it creates exists.
func dbfApplied(t *testing.T, db *gorm.DB, planID, api string) {
	t.Helper()
	if n := idemCount(t, db, "SELECT count(*) FROM config_plans WHERE id = ? AND status = 'applied'", planID); n != 1 {
		t.Errorf("plan %s is not applied", planID)
	}
	if n := idemCount(t, db, "SELECT count(*) FROM config_revisions WHERE plan_id = ?", planID); n != 1 {
		t.Errorf("%d revisions, want 1", n)
	}
	if n := idemCount(t, db, "SELECT count(*) FROM management_logs WHERE plan_id = ? AND type = 'config.applied'", planID); n != 1 {
		t.Errorf("%d config.applied entries, want 1", n)
	}
	if n := idemCount(t, db, "SELECT count(*) FROM resources WHERE kind = 'api' AND key = ?", api); n != 1 {
		t.Errorf("%d apis %q, want 1", n, api)
	}
}

func TestDatabaseDown503WithRetryAfterOnEveryEndpoint(t *testing.T) {
	t.Parallel()
	e, proxy, direct := dbfSetup(t, nil)
	// A revision to read (its row and its diff are read with pgx itself).
	rev, _ := e.Apply(e.Plan(idemDoc("first"), false)["id"].(string), "{}")["revision_id"].(string)
	if rev == "" {
		t.Fatal("the apply kept no revision")
	}
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	proxy.SetDown(true)

	for _, r := range []apitest.Request{
		{Method: "GET", Path: "/v1/config-plans/" + id},
		{Method: "GET", Path: "/v1/config-plans"},
		{Method: "GET", Path: "/v1/config"},
		{Method: "GET", Path: "/v1/config-revisions"},
		{Method: "GET", Path: "/v1/config-revisions/" + rev},
		{Method: "GET", Path: "/v1/config-revisions/" + rev + "/diff"},
		{Method: "GET", Path: "/v1/management-logs"},
		{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("other")},
		{Method: "POST", Path: idemApplyPath(id), Body: "{}"},
		{Method: "POST", Path: "/v1/connections/nowhere:test"},
	} {
		dbfWant503(t, r.Method+" "+r.Path, e.Do(r))
	}
	if !strings.Contains(e.Logs.String(), `"msg":"service unavailable"`) {
		t.Errorf("the cause of a 503 is not logged:\n%s", e.Logs.String())
	}
	if n := idemCount(t, direct, "SELECT count(*) FROM resources WHERE kind = 'api' AND key <> 'first'"); n != 0 {
		t.Errorf("%d apis written while the database was down", n)
	}

	proxy.SetDown(false)
	e.Apply(id, "{}")
	dbfApplied(t, direct, id, "orders")
}

// TestDatabaseLostMidApply503ThenTheLeaseFreesThePlan: the database goes
// away inside the apply's transaction and stays away; the client gets 503,
// nothing is written, and once the lease has passed the plan applies.
func TestDatabaseLostMidApply503ThenTheLeaseFreesThePlan(t *testing.T) {
	t.Parallel()
	e, proxy, direct := dbfSetup(t, func(p *testdb.Proxy) {
		p.SetDown(true)
	})
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	dbfWant503(t, "apply", idemPost(e, idemApplyPath(id), "{}", ""))
	if n := idemCount(t, direct, "SELECT count(*) FROM resources WHERE kind = 'api'"); n != 0 {
		t.Errorf("%d apis written by a failed apply", n)
	}
	proxy.SetDown(false)
	e.Clock.Advance(2 * plans.DefaultConfig().ApplyLease)
	e.Apply(id, "{}")
	dbfApplied(t, direct, id, "orders")
}

// TestDatabaseCutBeforeCommitIsRetriedUnseen: every connection is cut
// inside the apply's transaction, and the next plan creation loses its
// connection as it inserts the plan; each transaction runs again on a
// fresh connection and the client sees only its success.
func TestDatabaseCutBeforeCommitIsRetriedUnseen(t *testing.T) {
	t.Parallel()
	e, proxy, direct := dbfSetup(t, func(p *testdb.Proxy) {
		p.Cut()
	})
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	e.Apply(id, "{}")
	dbfApplied(t, direct, id, "orders")

	proxy.Cut()
	proxy.CutOn([]byte(`INSERT INTO "config_plans"`), true)
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("payments")})
	if r.Status != http.StatusCreated {
		t.Fatalf("plan creation: %d %s", r.Status, r.Body)
	}
	if proxy.Cuts() != 1 {
		t.Fatalf("%d cuts, want the one armed", proxy.Cuts())
	}
	if n := idemCount(t, direct, "SELECT count(*) FROM config_plans"); n != 2 {
		t.Errorf("%d plans, want 2", n)
	}
}

// TestDatabaseCutWhoseBackendLingersIsRetriedUnseen: every connection is
// cut inside the apply's transaction, and PostgreSQL's side of each stays
// open for a while, as when a backend has not yet seen its client go (a
// busy machine): the lost attempt still holds the plan's lock when the next
// one starts. The next attempts wait for it, and the client sees only the
// success, not the 409 "being applied" of an apply that holds the lock.
func TestDatabaseCutWhoseBackendLingersIsRetriedUnseen(t *testing.T) {
	t.Parallel()
	e, _, direct := dbfSetup(t, func(p *testdb.Proxy) {
		p.CutLingering(150 * time.Millisecond)
	})
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	e.Apply(id, "{}")
	dbfApplied(t, direct, id, "orders")
}

// TestDatabaseCutWhoseBackendLingersPastEveryAttemptIs503: as above, but
// the lost attempt's backend outlives every attempt of the transaction:
// the apply answers 503 with Retry-After and writes nothing. A retry while
// the lock is held finds the plan locked (409 applying, or 503), and once
// the backend is gone it applies the plan.
func TestDatabaseCutWhoseBackendLingersPastEveryAttemptIs503(t *testing.T) {
	t.Parallel()
	e, _, direct := dbfSetup(t, func(p *testdb.Proxy) {
		p.CutLingering(3 * time.Second)
	})
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	dbfWant503(t, "apply", idemPost(e, idemApplyPath(id), "{}", ""))
	if n := idemCount(t, direct, "SELECT count(*) FROM resources WHERE kind = 'api'"); n != 0 {
		t.Errorf("%d apis written by a failed apply", n)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := idemPost(e, idemApplyPath(id), "{}", "")
		if r.Status == http.StatusOK {
			break
		}
		if (r.Status != http.StatusServiceUnavailable && r.Code() != "config_plan_not_applicable") || time.Now().After(deadline) {
			t.Fatalf("apply once the backend is gone: %d %s", r.Status, r.Body)
		}
	}
	dbfApplied(t, direct, id, "orders")
}

// TestDatabaseCutAfterThePlanInsertAnswersThePlanStored: plan creation
// stores its plan in one statement of its own, and its connection is lost
// just after the server received it. The statement runs again on a fresh
// connection, finds the plan it stored under the same id, and the client
// gets that plan: one plan, with one plan_created event.
func TestDatabaseCutAfterThePlanInsertAnswersThePlanStored(t *testing.T) {
	t.Parallel()
	e, proxy, direct := dbfSetup(t, nil)
	// Armed on a parameter of that statement only (its event's type): pgx
	// prepares the statement's text first, then runs it with its
	// parameters.
	proxy.CutOn([]byte("plan_created"), false)
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("payments")})
	if r.Status != http.StatusCreated {
		t.Fatalf("plan creation: %d %s", r.Status, r.Body)
	}
	if proxy.Cuts() != 1 {
		t.Fatalf("%d cuts, want the one armed", proxy.Cuts())
	}
	id := r.JSON()["id"].(string)
	if n := idemCount(t, direct, "SELECT count(*) FROM config_plans"); n != 1 {
		t.Errorf("%d plans, want 1", n)
	}
	if n := idemCount(t, direct, "SELECT count(*) FROM plan_events WHERE plan_id = '"+id+"' AND type = 'plan_created'"); n != 1 {
		t.Errorf("%d plan_created events of %s, want 1", n, id)
	}
	e.Apply(id, "{}")
}

// TestDatabaseCutAroundCommitAnswersTheOutcome: the apply's connection is
// lost with its COMMIT in flight. Cut after the server received COMMIT, the
// apply committed: the client gets 200 with the applied plan, and a retry
// with its Idempotency-Key replays it. Cut before, nothing committed: the
// transaction runs again and applies once.
func TestDatabaseCutAroundCommitAnswersTheOutcome(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		before bool
	}{{"after", false}, {"before", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, proxy, direct := dbfSetupTx(t, func(p *testdb.Proxy, tx *gorm.DB) error {
				if p.Cuts() > 0 {
					return nil
				}
				// The apply's own COMMIT, not that of a job the
				// environment runs beside it on another connection; armed
				// again by each attempt of the transaction until the cut
				// (one may roll back, for a serialization failure).
				mark := "cut the commit of " + c.name
				p.CutOnConnOf([]byte(mark), testdb.CommitMessage, c.before)
				return tx.Exec("SELECT ?", mark).Error
			})
			id := e.Plan(idemDoc("orders"), false)["id"].(string)
			r := idemPost(e, idemApplyPath(id), "{}", "commit-"+c.name)
			idemFresh(t, r, http.StatusOK)
			if body := r.JSON(); body["status"] != "applied" || body["revision_id"] == nil {
				t.Fatalf("answer: %s", r.Body)
			}
			if proxy.Cuts() != 1 {
				t.Fatalf("%d cuts, want the one armed", proxy.Cuts())
			}
			dbfApplied(t, direct, id, "orders")
			if !c.before && !strings.Contains(e.Logs.String(), "the apply had committed") {
				t.Errorf("the resolution is not logged:\n%s", e.Logs.String())
			}
			again := idemPost(e, idemApplyPath(id), "{}", "commit-"+c.name)
			idemReplay(t, again, r)
		})
	}
}
