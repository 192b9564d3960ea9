package api_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/ratelimit"
	"github.com/keenauth/configplans/test/apitest"
)

const previewPath = "/v1/config-plans?preview=true"

const previewPolicy = `"config_preview";q=120;w=60, "config_preview_inflight";q=4;qu="concurrent-requests"`

func postPreview(e *apitest.Env, secret string, body any, header map[string]string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: previewPath, Body: body, Secret: secret, Header: header})
}

// countRows counts the rows of table of the harness's environment.
func countRows(t *testing.T, e *apitest.Env, table string) int64 {
	t.Helper()
	var n int64
	if err := e.DB.DB.Raw("SELECT count(*) FROM "+table+" WHERE environment_id = ?", e.EnvID).Scan(&n).Error; err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// TestPreviewAnswersThePlanAndStoresNothing previews a document: 200 with
// the plan that plan creation then stores (but its id, status, expiry and
// creator), the config_preview headers, and no plan, event or log entry.
func TestPreviewAnswersThePlanAndStoresNothing(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	seed := e.Plan(docOf(t, validDoc), false)
	e.Apply(seed["id"].(string), map[string]any{})
	plansBefore, eventsBefore := storedPlanRows(t, e)
	logsBefore := countRows(t, e, "management_logs")

	doc := docOf(t, `{"connections": {"db": null, "github": {"type": "social", "display_name": "GitHub", "active": true,
	  "social": {"provider": "github", "use_own_credentials": false}}}, "applications": {"portal": null},
	  "environment_settings": {"display_name": "Shop 2", "default_locale": "en", "session_lifetime_hours": 72}}`)
	r := postPreview(e, "", map[string]any{"config": doc}, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("preview: %d %s", r.Status, r.Body)
	}
	if got := r.Header.Get("RateLimit-Policy"); got != previewPolicy {
		t.Errorf("RateLimit-Policy = %q, want %q", got, previewPolicy)
	}
	if got := r.Header.Get("RateLimit"); !regexp.MustCompile(`^"config_preview";r=119;t=[12]$`).MatchString(got) {
		t.Errorf("RateLimit = %q", got)
	}
	if loc := r.Header.Get("Location"); loc != "" {
		t.Errorf("a preview has a Location: %q", loc)
	}
	preview := r.JSON()
	for _, m := range []string{"id", "expires_at", "created_by", "applied_at", "revision_id"} {
		if v, ok := preview[m]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", m, v, ok)
		}
	}
	if preview["status"] != "preview" {
		t.Errorf("status = %v", preview["status"])
	}
	if p, ev := storedPlanRows(t, e); p != plansBefore || ev != eventsBefore {
		t.Errorf("the preview stored %d plans and %d events", p-plansBefore, ev-eventsBefore)
	}
	if n := countRows(t, e, "management_logs"); n != logsBefore {
		t.Errorf("the preview wrote %d management-log entries", n-logsBefore)
	}

	// The plan that creation stores is the same.
	planned := e.Plan(doc, false)
	for _, m := range []string{"id", "status", "expires_at", "created_by", "created_at"} {
		delete(planned, m)
		delete(preview, m)
	}
	if diff := cmp.Diff(planned, preview); diff != "" {
		t.Errorf("preview and plan differ (-plan +preview):\n%s", diff)
	}
	// ?preview=false is a plan creation.
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans?preview=false", Body: map[string]any{"config": doc}})
	if r.Status != http.StatusCreated || r.JSON()["status"] != "planned" {
		t.Errorf("preview=false: %d %s", r.Status, r.Body)
	}
}

// TestPreviewRefusals: every check of plan creation, in its order, and a
// preview value other than true or false.
func TestPreviewRefusals(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	seed := e.Plan(docOf(t, validDoc), false)
	e.Apply(seed["id"].(string), map[string]any{})
	_, stale := e.Export()
	changeOrders(t, e, "Orders v2")
	setPolicies(t, e, `{"forbid_social_connections": true}`)
	_, noRead := keyWithPerms(t, e, "config:write")
	plansBefore, _ := storedPlanRows(t, e)

	social := docOf(t, `{"connections": {"github": {"type": "social", "display_name": "GitHub", "active": true,
	  "social": {"provider": "github", "use_own_credentials": false}}}}`)
	tests := []struct {
		name   string
		path   string
		secret string
		header map[string]string
		body   any
		status int
		code   string
		errors []string
	}{
		{name: "no key", secret: "-", body: `{"config":`, status: 401, code: "unauthenticated"},
		{name: "a preview that is not a boolean", path: "/v1/config-plans?preview=yes", body: map[string]any{"config": social},
			status: 400, code: "malformed_request"},
		{name: "not JSON", body: `{"config":`, status: 400, code: "malformed_request"},
		{name: "an unknown member", body: map[string]any{"config": social, "dry_run": true}, status: 400, code: "unknown_field",
			errors: []string{"/dry_run unknown_field"}},
		{name: "a malformed Idempotency-Key", header: map[string]string{"Idempotency-Key": ""}, body: map[string]any{"config": social},
			status: 400, code: "invalid_idempotency_key"},
		{name: "a missing read permission", secret: noRead, body: map[string]any{"config": social}, status: 403, code: "insufficient_permissions"},
		{name: "a spec problem", body: map[string]any{"config": docOf(t, `{"connections": {"github": {"type": "social", "display_name": "",
		  "active": true, "social": {"provider": "github", "use_own_credentials": false}}}}`), "versions": stale},
			status: 422, code: "validation_failed", errors: []string{"/config/connections/github/display_name too_short"}},
		{name: "a moved version", body: map[string]any{"config": social, "versions": stale}, status: 409, code: "config_conflict",
			errors: []string{"/versions/api~1orders version_changed"}},
		{name: "a policy", body: map[string]any{"config": social}, status: 422, code: "policy_conflict",
			errors: []string{"/config/connections/github/active forbid_social_connections"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if path == "" {
				path = previewPath
			}
			r := e.Do(apitest.Request{Method: "POST", Path: path, Body: tt.body, Secret: tt.secret, Header: tt.header})
			p := expectProblem(t, r, tt.status, tt.code)
			if tt.errors != nil {
				expectErrors(t, p, tt.errors...)
			}
		})
	}
	if after, _ := storedPlanRows(t, e); after != plansBefore {
		t.Errorf("refused previews stored %d plans", after-plansBefore)
	}
}

// TestPreviewIgnoresIdempotencyKey: a key is accepted and neither recorded
// nor replayed; the same key then creates a plan, and a preview after it
// is not answered from that plan's record.
func TestPreviewIgnoresIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	key := map[string]string{"Idempotency-Key": "deploy-4711"}
	for _, name := range []string{"a", "b"} {
		r := postPreview(e, "", idemPlanBody(name), key)
		if r.Status != http.StatusOK || idemReplayed(r) {
			t.Fatalf("preview %s with a key: %d replayed=%v %s", name, r.Status, idemReplayed(r), r.Body)
		}
	}
	idemFresh(t, idemPost(e, "/v1/config-plans", idemPlanBody("a"), "deploy-4711"), http.StatusCreated)
	r := postPreview(e, "", idemPlanBody("a"), key)
	if r.Status != http.StatusOK || idemReplayed(r) || r.JSON()["status"] != "preview" {
		t.Errorf("preview after a plan with the key: %d replayed=%v %s", r.Status, idemReplayed(r), r.Body)
	}
}

// TestPreviewLimits: previews count against config_preview only — neither
// config_plan's quota nor its in-flight slots — and are refused past their
// own quota.
func TestPreviewLimits(t *testing.T) {
	t.Parallel()
	dbOpts, entered, release := idemSlowApply()
	e := apitest.Setup(t, apitest.Options{DB: dbOpts, RateLimit: rlConfig(3, 3600, 1), Metrics: true,
		PreviewRateLimit: ratelimit.Config{Quota: 3, Window: time.Hour}})
	defer release()
	id := e.Plan(idemDoc("slow"), false)["id"].(string)
	done := make(chan *apitest.Response, 1)
	go func() { done <- e.Do(apitest.Request{Method: "POST", Path: idemApplyPath(id), Body: map[string]any{}}) }()
	<-entered

	// The apply holds the only config_plan_inflight slot: previews still run.
	for i := range 3 {
		r := postPreview(e, "", idemPlanBody(fmt.Sprint("p", i)), nil)
		idemWant(t, r, http.StatusOK, "")
		if want := fmt.Sprintf(`"config_preview";r=%d;t=`, 2-i); !regexp.MustCompile("^" + regexp.QuoteMeta(want) + `\d+$`).MatchString(r.Header.Get("RateLimit")) {
			t.Errorf("preview %d: RateLimit = %q", i, r.Header.Get("RateLimit"))
		}
	}
	r := postPreview(e, "", idemPlanBody("p3"), nil)
	idemWant(t, r, http.StatusTooManyRequests, "rate_limited")
	if r.JSON()["policy"] != ratelimit.PolicyPreview || r.Header.Get("Retry-After") == "" {
		t.Errorf("429: policy %v, Retry-After %q", r.JSON()["policy"], r.Header.Get("Retry-After"))
	}
	if got := r.Header.Get("RateLimit-Policy"); got != `"config_preview";q=3;w=3600, "config_preview_inflight";q=4;qu="concurrent-requests"` {
		t.Errorf("RateLimit-Policy = %q", got)
	}
	if got := sample(scrape(t, e), "keenauthd_rate_limit_decisions_total", map[string]string{"decision": "limited", "policy": "config_preview"}); got != 1 {
		t.Errorf("previews limited by config_preview counted %v times, want 1", got)
	}
	release()
	idemWant(t, <-done, http.StatusOK, "")
	// The previews took nothing of config_plan's quota of 3: the plan and
	// the apply took two, the third request runs.
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("after")})
	idemWant(t, r, http.StatusCreated, "")
	if got := r.Header.Get("RateLimit"); !regexp.MustCompile(`^"config_plan";r=0;t=\d+$`).MatchString(got) {
		t.Errorf("RateLimit after the previews = %q, want r=0", got)
	}
}

// TestPreviewInflightLimit: with 4 previews of the environment running
// (their slots in Redis), a fifth is refused by config_preview_inflight.
func TestPreviewInflightLimit(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	e.RequireRedis()
	ctx := context.Background()
	now, err := e.Redis.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	key := e.Prefix + "rl:{" + e.EnvID + "}:config_preview:inflight"
	exp := float64(now.Add(time.Minute).UnixMicro())
	for i := range 4 {
		if err := e.Redis.ZAdd(ctx, key, redis.Z{Score: exp, Member: fmt.Sprint("running-", i)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Plan creation has slots of its own.
	idemWant(t, e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("plan")}), http.StatusCreated, "")
	r := postPreview(e, "", idemPlanBody("fifth"), nil)
	rlWantPreviewInflight(t, r)
	if err := e.Redis.ZRem(ctx, key, "running-0").Err(); err != nil {
		t.Fatal(err)
	}
	idemWant(t, postPreview(e, "", idemPlanBody("fifth"), nil), http.StatusOK, "")
}

func rlWantPreviewInflight(t *testing.T, r *apitest.Response) {
	t.Helper()
	idemWant(t, r, http.StatusTooManyRequests, "rate_limited")
	if r.JSON()["policy"] != ratelimit.PolicyPreviewInflight {
		t.Errorf("policy = %v", r.JSON()["policy"])
	}
	ra := r.Header.Get("Retry-After")
	if want := `"config_preview";r=120;t=0, "config_preview_inflight";r=0;t=` + ra; r.Header.Get("RateLimit") != want || (ra != "1" && ra != "2") {
		t.Errorf("RateLimit = %q, Retry-After = %q", r.Header.Get("RateLimit"), ra)
	}
}
