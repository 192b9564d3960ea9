package api_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/ratelimit"
	"github.com/keenauth/configplans/test/apitest"
)

func rlConfig(quota, windowSeconds, inflight int) ratelimit.Config {
	return ratelimit.Config{Quota: quota, Window: time.Duration(windowSeconds) * time.Second, Inflight: inflight}
}

// rlSleep waits for the Retry-After of r.
func rlSleep(t *testing.T, r *apitest.Response) {
	t.Helper()
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Fatalf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
	time.Sleep(time.Duration(secs) * time.Second)
}

var rlItem = regexp.MustCompile(`^"config_plan";r=(\d+);t=(\d+)(, "config_plan_inflight";r=0;t=(\d+))?$`)

// rlState parses the RateLimit header: r and t of config_plan, and t of
// config_plan_inflight (-1 when absent).
func rlState(t *testing.T, r *apitest.Response) (remaining, reset, inflightReset int) {
	t.Helper()
	m := rlItem.FindStringSubmatch(r.Header.Get("RateLimit"))
	if m == nil {
		t.Fatalf("RateLimit = %q", r.Header.Get("RateLimit"))
	}
	remaining, _ = strconv.Atoi(m[1])
	reset, _ = strconv.Atoi(m[2])
	inflightReset = -1
	if m[4] != "" {
		inflightReset, _ = strconv.Atoi(m[4])
	}
	return remaining, reset, inflightReset
}

// rlWant429 checks a 429 of policy: Retry-After equals the t of that
// policy in RateLimit and the body's retry_after, within [1, maxWait].
func rlWant429(t *testing.T, r *apitest.Response, policy string, maxWait int) {
	t.Helper()
	idemWant(t, r, http.StatusTooManyRequests, "rate_limited")
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > maxWait {
		t.Fatalf("Retry-After = %q, want 1..%d", r.Header.Get("Retry-After"), maxWait)
	}
	body := r.JSON()
	if body["retry_after"] != float64(ra) || body["policy"] != policy {
		t.Errorf("retry_after = %v, policy = %v; want %d, %s", body["retry_after"], body["policy"], ra, policy)
	}
	_, reset, inflightReset := rlState(t, r)
	switch policy {
	case ratelimit.PolicyConfigPlan:
		if reset != ra || inflightReset != -1 {
			t.Errorf("RateLimit %q does not say Retry-After %d", r.Header.Get("RateLimit"), ra)
		}
	case ratelimit.PolicyInflight:
		if inflightReset != ra {
			t.Errorf("RateLimit %q does not say Retry-After %d for config_plan_inflight", r.Header.Get("RateLimit"), ra)
		}
	}
	if r.Header.Get("RateLimit-Policy") == "" {
		t.Errorf("429 without RateLimit-Policy")
	}
}

func TestRateLimitHeadersOnPlanCreationAndApply(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{RateLimit: rlConfig(30, 60, 2)})
	const policy = `"config_plan";q=30;w=60, "config_plan_inflight";q=2;qu="concurrent-requests"`
	p1 := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("one")})
	p2 := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("two")})
	vo := e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(p1.JSON()["id"].(string)) + "?validate_only=true"})
	ap := e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(p1.JSON()["id"].(string)), Body: map[string]any{}})
	for i, r := range []*apitest.Response{p1, p2, vo, ap} {
		if r.Status >= 300 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
		if got := r.Header.Get("RateLimit-Policy"); got != policy {
			t.Errorf("request %d: RateLimit-Policy = %q\nwant %q", i, got, policy)
		}
		// One request every 2 s; t is until the whole quota is back.
		remaining, reset, inflight := rlState(t, r)
		if remaining != 29-i || reset < 1 || reset > 2*(i+1) || inflight != -1 {
			t.Errorf("request %d: RateLimit = %q, want r=%d;t≤%d", i, r.Header.Get("RateLimit"), 29-i, 2*(i+1))
		}
	}
	if got := p1.Header.Get("RateLimit"); got != `"config_plan";r=29;t=2` {
		t.Errorf("first request: RateLimit = %q", got)
	}
	// Reads are not limited and carry no rate-limit header.
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans"})
	if r.Header.Get("RateLimit") != "" || r.Header.Get("RateLimit-Policy") != "" {
		t.Errorf("GET carries rate-limit headers: %v", r.Header)
	}
}

// TestRateLimitSharedByPlanCreationAndApply: a quota of 3 is used by two
// plan creations and one apply; then both are refused, and a refused apply
// leaves its plan planned.
func TestRateLimitSharedByPlanCreationAndApply(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{RateLimit: rlConfig(3, 60, 2)})
	id1 := e.Plan(idemDoc("one"), false)["id"].(string)
	id2 := e.Plan(idemDoc("two"), false)["id"].(string)
	last := e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(id1), Body: map[string]any{}})
	idemWant(t, last, http.StatusOK, "")
	if remaining, _, _ := rlState(t, last); remaining != 0 {
		t.Fatalf("after 3 requests RateLimit = %q", last.Header.Get("RateLimit"))
	}

	rlWant429(t, e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("three")}), ratelimit.PolicyConfigPlan, 20)
	rlWant429(t, e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(id2), Body: map[string]any{}}), ratelimit.PolicyConfigPlan, 20)
	rlWant429(t, e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(id2) + "?validate_only=true"}), ratelimit.PolicyConfigPlan, 20)
	rev := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-revisions/" + idemPlan(t, e, id1)["revision_id"].(string) + ":restore"})
	rlWant429(t, rev, ratelimit.PolicyConfigPlan, 20)

	if got := idemPlan(t, e, id2)["status"]; got != "planned" {
		t.Errorf("plan after a 429 is %v, want planned", got)
	}
	if got := idemEvents(t, e, id2); len(got) != 1 || got[0] != "plan_created" {
		t.Errorf("events of the refused plan = %v", got)
	}
	if n := idemCount(t, e.GormDB(), "SELECT count(*) FROM config_plans"); n != 2 {
		t.Errorf("%d plans, want 2", n)
	}
}

// TestRateLimit429BeforeNotApplicable: row 6 comes before row 9.
func TestRateLimit429BeforeNotApplicable(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{RateLimit: rlConfig(2, 60, 2)})
	id := e.Plan(idemDoc("one"), false)["id"].(string)
	e.Apply(id, map[string]any{})
	rlWant429(t, e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(id), Body: map[string]any{}}), ratelimit.PolicyConfigPlan, 30)
	// Answers before row 6 still come first: 404 and 403.
	idemWant(t, e.Do(apitest.Request{Method: "POST", Path: idemApplyPath("cfgp_00000000000000000000000000")}), http.StatusNotFound, "not_found")
	reader := e.Key("config:read", "apis:read")
	idemWant(t, e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(id), Secret: reader}), http.StatusForbidden, "insufficient_permissions")
}

// TestInflightLimit429WhileAnApplyRuns: with one request at a time per
// environment, a plan creation during a slow apply is refused; another
// environment is not.
func TestInflightLimit429WhileAnApplyRuns(t *testing.T) {
	t.Parallel()
	dbOpts, entered, release := idemSlowApply()
	e := apitest.Setup(t, apitest.Options{DB: dbOpts, RateLimit: rlConfig(30, 60, 1)})
	defer release()
	id := e.Plan(idemDoc("slow"), false)["id"].(string)
	done := make(chan *apitest.Response, 1)
	go func() { done <- e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(id), Body: map[string]any{}}) }()
	<-entered

	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("blocked")})
	rlWant429(t, r, ratelimit.PolicyInflight, 2)
	if remaining, _, _ := rlState(t, r); remaining != 28 {
		t.Errorf("a request refused by config_plan_inflight consumed quota: RateLimit %q", r.Header.Get("RateLimit"))
	}

	// Another environment over the same Redis and database.
	ctx := context.Background()
	other, err := e.Domain.Environments.CreateEnvironment(ctx, "Other")
	if err != nil {
		t.Fatal(err)
	}
	key, err := e.Domain.Keys.CreateKey(ctx, other.ID, config.AllPermissions())
	if err != nil {
		t.Fatal(err)
	}
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("elsewhere"), Secret: key.Secret})
	idemWant(t, r, http.StatusCreated, "")
	if got := r.Header.Get("RateLimit"); got != `"config_plan";r=29;t=2` {
		t.Errorf("other environment: RateLimit = %q", got)
	}

	release()
	idemWant(t, <-done, http.StatusOK, "")
	idemWant(t, e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("after")}), http.StatusCreated, "")
}

// TestFleetCapacity503WhileAnApplyRuns: with a fleet capacity of one
// apply, an apply of another environment is refused while one runs, and
// runs once it is done. Plan creation does not count against it.
func TestFleetCapacity503WhileAnApplyRuns(t *testing.T) {
	t.Parallel()
	dbOpts, entered, release := idemSlowApply()
	e := apitest.Setup(t, apitest.Options{DB: dbOpts, FleetLimit: 1})
	defer release()
	ctx := context.Background()
	other, err := e.Domain.Environments.CreateEnvironment(ctx, "Other")
	if err != nil {
		t.Fatal(err)
	}
	key, err := e.Domain.Keys.CreateKey(ctx, other.ID, config.AllPermissions())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody(name), Secret: key.Secret})
		idemWant(t, r, http.StatusCreated, "")
		return r.JSON()["id"].(string)
	}
	waiting := mk("waiting")

	id := e.Plan(idemDoc("slow"), false)["id"].(string)
	done := make(chan *apitest.Response, 1)
	go func() { done <- e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(id), Body: map[string]any{}}) }()
	<-entered

	r := e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(waiting), Body: map[string]any{}, Secret: key.Secret})
	idemWant(t, r, http.StatusServiceUnavailable, "service_unavailable")
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || r.JSON()["retry_after"] != float64(ra) {
		t.Errorf("Retry-After = %q, retry_after = %v", r.Header.Get("Retry-After"), r.JSON()["retry_after"])
	}
	mk("planning") // plan creation is not an apply
	r = e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + waiting, Secret: key.Secret})
	if got := r.JSON()["status"]; got != "planned" {
		t.Errorf("refused plan is %v", got)
	}

	release()
	idemWant(t, <-done, http.StatusOK, "")
	r = e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(waiting), Body: map[string]any{}, Secret: key.Secret})
	idemWant(t, r, http.StatusOK, "")
}

// TestRateLimitWindowComesBack: quota 1 per 2 s, the next request after
// Retry-After is allowed.
func TestRateLimitWindowComesBack(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{RateLimit: rlConfig(1, 2, 2)})
	e.Plan(idemDoc("one"), false)
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("two")})
	rlWant429(t, r, ratelimit.PolicyConfigPlan, 2)
	rlSleep(t, r)
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("two")})
	idemWant(t, r, http.StatusCreated, "")
	if got := r.Header.Get("RateLimit"); got != `"config_plan";r=0;t=2` {
		t.Errorf("RateLimit = %q", got)
	}
}
