package api_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/apitest"
	"github.com/keenauth/configplans/test/testdb"
)

// proxyClient is a Redis client through the proxy, set up as the test Redis's.
func proxyClient(t *testing.T, p *testdb.Proxy) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), DialTimeout: 500 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// rfSetup starts the API over a Redis reached through a proxy, with a key
// prefix of the test's own (the direct client deletes its keys at the end).
func rfSetup(t *testing.T, delay time.Duration, opt apitest.Options) (*apitest.Env, *testdb.Proxy, *redis.Client) {
	t.Helper()
	direct, prefix := testdb.Redis(t)
	p := testdb.StartProxy(t, delay)
	opt.Redis, opt.Prefix = proxyClient(t, p), prefix
	return apitest.Setup(t, opt), p, direct
}

// rfLogged fails t unless the logs hold a line with msg.
func rfLogged(t *testing.T, e *apitest.Env, msg string) {
	t.Helper()
	if !strings.Contains(e.Logs.String(), `"msg":"`+msg) {
		t.Errorf("no log line %q in\n%s", msg, e.Logs.String())
	}
}

func TestRedisDownWhenClaiming503AndNothingRuns(t *testing.T) {
	t.Parallel()
	e, proxy, _ := rfSetup(t, 0, apitest.Options{})
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	proxy.SetDown(true)

	for _, c := range []struct{ path, body string }{
		{idemApplyPath(id), "{}"},
		{"/v1/config-plans", `{"config": {"apis": {"other": null}}}`},
		{"/v1/connections/nowhere:test", ""},
	} {
		r := idemPost(e, c.path, c.body, "down-1")
		idemWant(t, r, http.StatusServiceUnavailable, "service_unavailable")
		if r.Header.Get("Retry-After") != "1" || r.JSON()["retry_after"] != 1.0 {
			t.Errorf("%s: Retry-After %q, retry_after %v", c.path, r.Header.Get("Retry-After"), r.JSON()["retry_after"])
		}
	}
	rfLogged(t, e, "idempotency store unavailable")
	if got := idemEvents(t, e, id); strings.Join(got, ",") != "plan_created" {
		t.Errorf("events = %v: something ran", got)
	}
	if got := idemPlan(t, e, id)["status"]; got != "planned" {
		t.Errorf("plan is %v", got)
	}
	if n := idemCount(t, e.GormDB(), "SELECT count(*) FROM config_plans"); n != 1 {
		t.Errorf("%d plans, want 1", n)
	}

	// Back up: the same key runs.
	proxy.SetDown(false)
	idemFresh(t, idemPost(e, idemApplyPath(id), "{}", "down-1"), http.StatusOK)
	idemAppliedOnce(t, e, id)
}

// TestRedisDyingAfterTheClaimStillAnswersTheRealApply: Redis goes away
// inside the apply's transaction, so storing the answer fails after the
// commit; the client gets its 200 all the same.
func TestRedisDyingAfterTheClaimStillAnswersTheRealApply(t *testing.T) {
	t.Parallel()
	var proxy *testdb.Proxy
	var killed atomic.Bool
	dbOpts := configdb.Options{BeforeApplyWrite: func(*gorm.DB) error {
		if !killed.Swap(true) {
			proxy.SetDown(true)
		}
		return nil
	}}
	e, p, direct := rfSetup(t, 0, apitest.Options{DB: dbOpts})
	proxy = p
	id := e.Plan(idemDoc("orders"), false)["id"].(string)

	r := idemPost(e, idemApplyPath(id), "{}", "late")
	idemFresh(t, r, http.StatusOK)
	if body := r.JSON(); body["status"] != "applied" || body["revision_id"] == nil {
		t.Fatalf("answer: %s", r.Body)
	}
	rfLogged(t, e, "storing an idempotent response failed")
	idemAppliedOnce(t, e, id)

	// Back up: the record is still in flight until its lease passes…
	proxy.SetDown(false)
	idemWant(t, idemPost(e, idemApplyPath(id), "{}", "late"), http.StatusConflict, "idempotency_key_in_use")
	// …and once it has gone, PostgreSQL answers the applied plan.
	if n := idemDelete(t, direct, e.Prefix+"idem:*"); n != 1 {
		t.Fatalf("%d idempotency records, want the one in flight", n)
	}
	again := idemPost(e, idemApplyPath(id), "{}", "late")
	idemReplay(t, again, r)
	idemAppliedOnce(t, e, id)
}

// TestRateLimitFailsOpenWhenRedisIsDown: with a quota of 1, Redis down
// lets every request run (no idempotency key: a claim would be a 503).
func TestRateLimitFailsOpenWhenRedisIsDown(t *testing.T) {
	t.Parallel()
	e, proxy, _ := rfSetup(t, 0, apitest.Options{RateLimit: rlConfig(1, 60, 1), FleetLimit: 1})
	proxy.SetDown(true)
	rfFailsOpen(t, e)
}

// TestRateLimitFailsOpenWhenRedisIsSlow: every answer of Redis takes
// 400 ms, past the 150 ms deadline of a rate-limit call.
func TestRateLimitFailsOpenWhenRedisIsSlow(t *testing.T) {
	t.Parallel()
	e, _, _ := rfSetup(t, 400*time.Millisecond, apitest.Options{RateLimit: rlConfig(1, 60, 1), FleetLimit: 1})
	rfFailsOpen(t, e)
	if !strings.Contains(e.Logs.String(), "slower than 150ms") {
		t.Errorf("the fail-open log line does not name the deadline:\n%s", e.Logs.String())
	}
}

func rfFailsOpen(t *testing.T, e *apitest.Env) {
	t.Helper()
	for _, name := range []string{"one", "two", "three"} {
		r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody(name)})
		idemWant(t, r, http.StatusCreated, "")
		a := e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(r.JSON()["id"].(string)), Body: map[string]any{}})
		idemWant(t, a, http.StatusOK, "")
		for _, r := range []*apitest.Response{r, a} {
			if h := r.Header.Get("RateLimit"); h != "" {
				t.Errorf("a failed-open answer carries RateLimit %q", h)
			}
		}
	}
	rfLogged(t, e, "rate limit failed open")
	rfLogged(t, e, "fleet capacity failed open")
}
