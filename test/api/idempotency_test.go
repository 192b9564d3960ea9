package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/apitest"
)

// idemDoc is a document that creates one API called name.
func idemDoc(name string) map[string]any {
	return map[string]any{"apis": map[string]any{name: map[string]any{
		"identifier": "https://api.shop.example/" + name, "display_name": "API " + name, "token_lifetime_seconds": 3600}}}
}

func idemPlanBody(name string) map[string]any { return map[string]any{"config": idemDoc(name)} }

func idemApplyPath(planID string) string { return "/v1/config-plans/" + planID + ":apply" }

// idemPost sends a POST with an Idempotency-Key header (none when key is "").
func idemPost(e *apitest.Env, path string, body any, key string) *apitest.Response {
	e.T.Helper()
	h := map[string]string{}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return e.Do(apitest.Request{Method: "POST", Path: path, Body: body, Header: h})
}

// idemPostAs is idemPost with another API key's secret.
func idemPostAs(e *apitest.Env, secret, path string, body any, key string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: path, Body: body, Secret: secret, Header: map[string]string{"Idempotency-Key": key}})
}

// idemWant fails t unless r answers status with the problem code ("" for a
// success).
func idemWant(t *testing.T, r *apitest.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.Code() != code {
		t.Fatalf("answer = %d %q, want %d %q: %s", r.Status, r.Code(), status, code, r.Body)
	}
}

func idemReplayed(r *apitest.Response) bool { return r.Header.Get("Idempotent-Replayed") == "true" }

// idemFresh fails t unless r is a first answer, not a replay.
func idemFresh(t *testing.T, r *apitest.Response, status int) {
	t.Helper()
	idemWant(t, r, status, "")
	if h := r.Header.Values("Idempotent-Replayed"); len(h) != 0 {
		t.Fatalf("a first answer carries Idempotent-Replayed %q", h)
	}
}

// idemReplay fails t unless r replays first: the same status and body with
// Idempotent-Replayed: true.
func idemReplay(t *testing.T, r, first *apitest.Response) {
	t.Helper()
	if r.Status != first.Status || !bytes.Equal(r.Body, first.Body) {
		t.Fatalf("replay = %d %s\nwant %d %s", r.Status, r.Body, first.Status, first.Body)
	}
	if got := r.Header.Values("Idempotent-Replayed"); len(got) != 1 || got[0] != "true" {
		t.Fatalf("Idempotent-Replayed = %q, want [true]", got)
	}
	if r.Header.Get("Request-Id") == first.Header.Get("Request-Id") {
		t.Errorf("a replay has the Request-Id of the first answer")
	}
}

// idemCount counts rows of the test's database.
func idemCount(t *testing.T, db *gorm.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Raw(query, args...).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// idemApplied counts what applies of a plan wrote: apply_started events,
// revisions and config.applied entries.
func idemApplied(t *testing.T, e *apitest.Env, planID string) (started, revisions, logs int64) {
	t.Helper()
	db := e.GormDB()
	return idemCount(t, db, "SELECT count(*) FROM plan_events WHERE plan_id = ? AND type = 'apply_started'", planID),
		idemCount(t, db, "SELECT count(*) FROM config_revisions WHERE plan_id = ?", planID),
		idemCount(t, db, "SELECT count(*) FROM management_logs WHERE plan_id = ? AND type = 'config.applied'", planID)
}

// idemAppliedOnce fails t unless the plan was applied exactly once.
func idemAppliedOnce(t *testing.T, e *apitest.Env, planID string) {
	t.Helper()
	if s, r, l := idemApplied(t, e, planID); s != 1 || r != 1 || l != 1 {
		t.Fatalf("plan %s: %d apply_started, %d revisions, %d config.applied; want one each", planID, s, r, l)
	}
}

// idemPlan reads a plan through the API.
func idemPlan(t *testing.T, e *apitest.Env, planID string) map[string]any {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + planID})
	idemWant(t, r, http.StatusOK, "")
	return r.JSON()
}

// idemEvents lists the types of a plan's events, oldest first.
func idemEvents(t *testing.T, e *apitest.Env, planID string) []string {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + planID + "/events?limit=100"})
	idemWant(t, r, http.StatusOK, "")
	var pg struct {
		Data []struct {
			Type string `json:"type"`
		} `json:"data"`
	}
	r.Decode(t, &pg)
	out := []string{}
	for _, ev := range pg.Data {
		out = append(out, ev.Type)
	}
	return out
}

// idemSlowApply returns storage options under which an apply waits inside
// its transaction, just before writing, until release is called. entered
// receives once for each apply that reaches the wait.
func idemSlowApply() (dbOpts configdb.Options, entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 64)
	gate := make(chan struct{})
	dbOpts.BeforeApplyWrite = func(*gorm.DB) error {
		select {
		case in <- struct{}{}:
		default:
		}
		<-gate
		return nil
	}
	return dbOpts, in, sync.OnceFunc(func() { close(gate) })
}

// idemDelete deletes every key of the Redis key space that starts with
// pattern's prefix (pattern ends with *) and returns how many there were.
func idemDelete(t *testing.T, rdb *redis.Client, pattern string) int {
	t.Helper()
	if rdb == nil {
		t.Skip("needs PostgreSQL/Redis: deletes Redis records (the embedded backend has none)")
	}
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, pattern).Result()
	if err != nil {
		t.Fatalf("KEYS %s: %v", pattern, err)
	}
	if len(keys) > 0 {
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			t.Fatalf("DEL: %v", err)
		}
	}
	return len(keys)
}

// idemRaw sends a POST whose Idempotency-Key header has exactly the given
// lines, which apitest.Request cannot express.
func idemRaw(t *testing.T, e *apitest.Env, path, body string, lines []string) *apitest.Response {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.Secret)
	req.Header.Set("Content-Type", "application/json")
	for _, l := range lines {
		req.Header.Add("Idempotency-Key", l)
	}
	rec := httptest.NewRecorder()
	e.Handler.ServeHTTP(rec, req)
	return &apitest.Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// idemPOSTs are the four POST endpoints of the API over one environment:
// plan creation, apply, restore and connection test.
type idemPOSTs struct {
	planBody func(i int) string // a new plan's body each time
	apply    func() string      // the path of a new plan's apply
	restore  string
	connTest string
}

func idemEndpoints(t *testing.T, e *apitest.Env) idemPOSTs {
	t.Helper()
	first := e.Plan(idemDoc("first"), false)
	applied := e.Apply(first["id"].(string), map[string]any{})
	n := 0
	return idemPOSTs{
		planBody: func(i int) string {
			b, _ := json.Marshal(idemPlanBody("p" + strconv.Itoa(i)))
			return string(b)
		},
		apply: func() string {
			n++
			return idemApplyPath(e.Plan(idemDoc("a"+strconv.Itoa(n)), false)["id"].(string))
		},
		restore:  "/v1/config-revisions/" + applied["revision_id"].(string) + ":restore",
		connTest: "/v1/connections/nowhere:test",
	}
}

func TestIdempotencyKeyRefused400OnEveryPost(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	ep := idemEndpoints(t, e)
	bad := map[string][]string{
		"empty":           {""},
		"empty quoted":    {`""`},
		"256 characters":  {strings.Repeat("k", 256)},
		"256 quoted":      {`"` + strings.Repeat("k", 256) + `"`},
		"two lines":       {"one", "two"},
		"two equal lines": {"same", "same"},
		"control char":    {"ab\x01cd"},
		"tab inside":      {"ab\tcd"},
		"non-ASCII":       {"clé"},
		"list":            {"a, b"},
		"unclosed quote":  {`"abc`},
		"after the quote": {`"abc"d`},
	}
	for name, lines := range bad {
		for _, c := range []struct{ path, body string }{
			{"/v1/config-plans", ep.planBody(0)},
			{ep.apply(), "{}"},
			{ep.restore, ""},
			{ep.connTest, ""},
		} {
			r := idemRaw(t, e, c.path, c.body, lines)
			if r.Status != http.StatusBadRequest || r.Code() != "invalid_idempotency_key" {
				t.Errorf("%s on %s: %d %s, want 400 invalid_idempotency_key", name, c.path, r.Status, r.Body)
			}
			if r.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s on %s: Content-Type %q", name, c.path, r.Header.Get("Content-Type"))
			}
		}
	}
	// Nothing ran: the plans of the apply paths are still planned and
	// only the fixture's plans exist.
	if n := idemCount(t, e.GormDB(), "SELECT count(*) FROM config_plans WHERE status <> 'planned'"); n != 1 {
		t.Errorf("%d plans left planned, want only the fixture's applied plan", n)
	}
	if n := idemCount(t, e.GormDB(), "SELECT count(*) FROM config_revisions"); n != 1 {
		t.Errorf("%d revisions, want the fixture's one", n)
	}
}

func TestIdempotencyKeyLengthsOneTo255Accepted(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for i, key := range []string{"k", strings.Repeat("x", 255), `"` + strings.Repeat("y", 255) + `"`, "!#$%&'()*+-./:;<=>?@[]^_`{|}~",
		`"a\"quote"`} {
		r := idemPost(e, "/v1/config-plans", idemPlanBody("len"+strconv.Itoa(i)), key)
		idemFresh(t, r, http.StatusCreated)
	}
}

func TestIdempotencyKeyBareAndQuotedAreTheSameKeyOnEveryPost(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	ep := idemEndpoints(t, e)
	for i, c := range []struct {
		path   string
		body   string
		status int
		code   string
	}{
		{"/v1/config-plans", ep.planBody(1), http.StatusCreated, ""},
		{ep.apply(), "{}", http.StatusOK, ""},
		{ep.restore, "", http.StatusCreated, ""},
		{ep.connTest, "", http.StatusNotFound, "not_found"}, // an answer of the operation: stored
	} {
		key := "same-key-" + strconv.Itoa(i)
		first := idemRaw(t, e, c.path, c.body, []string{key})
		idemWant(t, first, c.status, c.code)
		quoted := idemRaw(t, e, c.path, c.body, []string{`"` + key + `"`})
		idemReplay(t, quoted, first)
		padded := idemRaw(t, e, c.path, c.body, []string{" \t" + key + " "})
		idemReplay(t, padded, first)
	}
	if n := idemCount(t, e.GormDB(), "SELECT count(*) FROM config_plans"); n != 4 {
		t.Errorf("%d plans, want 4 (the fixture's, one created, one applied, one restored)", n)
	}
}

// TestIdempotencyAnswersComeInTheContractOrder checks §6 rows 1 to 4:
// 401, then 400 (the body before the key), then the idempotency answers,
// then the operation (404).
func TestIdempotencyAnswersComeInTheContractOrder(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(idemDoc("orders"), false)
	path := idemApplyPath(p["id"].(string))

	// 401 before 400: no key, or an unknown one, with a bad Idempotency-Key.
	for _, secret := range []string{"-", "ksk_unknown"} {
		r := e.Do(apitest.Request{Method: "POST", Path: path, Body: "{", Secret: secret, Header: map[string]string{"Idempotency-Key": ""}})
		idemWant(t, r, http.StatusUnauthorized, "unauthenticated")
	}
	// A malformed body is 400 malformed_request with a bad key or a good one.
	idemWant(t, idemRaw(t, e, path, "{", []string{"a", "b"}), http.StatusBadRequest, "malformed_request")
	idemWant(t, idemPost(e, path, `{"confirm_deletions": 3}`, "k1"), http.StatusBadRequest, "malformed_request")
	idemWant(t, idemPost(e, path, `{"nope": 1}`, "k1"), http.StatusBadRequest, "unknown_field")
	idemWant(t, idemPost(e, "/v1/config-plans", "[]", "k1"), http.StatusBadRequest, "malformed_request")
	// A bad key comes before the operation's own answers (404).
	idemWant(t, idemRaw(t, e, idemApplyPath("cfgp_00000000000000000000000000"), "{}", []string{""}), http.StatusBadRequest, "invalid_idempotency_key")

	// None of those was stored: k1 runs the apply now.
	first := idemPost(e, path, map[string]any{}, "k1")
	idemFresh(t, first, http.StatusOK)
	// And an idempotency answer comes before the operation's: k1 with
	// another plan (not found) is a mismatch, not a 404.
	idemWant(t, idemPost(e, idemApplyPath("cfgp_00000000000000000000000000"), map[string]any{}, "k1"),
		http.StatusUnprocessableEntity, "idempotency_key_mismatch")
	// A 401 is not stored either: the same key runs for the real API key.
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: idemPlanBody("later"), Secret: "ksk_unknown",
		Header: map[string]string{"Idempotency-Key": "k2"}})
	idemWant(t, r, http.StatusUnauthorized, "unauthenticated")
	idemFresh(t, idemPost(e, "/v1/config-plans", idemPlanBody("later"), "k2"), http.StatusCreated)
}

func TestIdempotentPlanCreationReplays201(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	first := idemPost(e, "/v1/config-plans", idemPlanBody("orders"), "create-1")
	idemFresh(t, first, http.StatusCreated)
	for range 3 {
		again := idemPost(e, "/v1/config-plans", idemPlanBody("orders"), "create-1")
		idemReplay(t, again, first)
		if again.Header.Get("Location") != first.Header.Get("Location") || first.Header.Get("Location") == "" {
			t.Errorf("Location = %q, first %q", again.Header.Get("Location"), first.Header.Get("Location"))
		}
		if ct := again.Header.Get("Content-Type"); ct != first.Header.Get("Content-Type") {
			t.Errorf("Content-Type = %q", ct)
		}
		if h := again.Header.Get("RateLimit"); h != "" {
			t.Errorf("a replay carries RateLimit %q", h)
		}
	}
	if n := idemCount(t, e.GormDB(), "SELECT count(*) FROM config_plans"); n != 1 {
		t.Fatalf("%d plans, want 1", n)
	}
}

func TestIdempotentApplyReplays200AndAppliesOnce(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	first := idemPost(e, idemApplyPath(id), map[string]any{}, "apply-1")
	idemFresh(t, first, http.StatusOK)
	if first.JSON()["status"] != "applied" {
		t.Fatalf("first apply: %s", first.Body)
	}
	for range 3 {
		idemReplay(t, idemPost(e, idemApplyPath(id), map[string]any{}, "apply-1"), first)
	}
	idemAppliedOnce(t, e, id)
}

// TestIdempotentApplyWithAnEmptyBodyIsTheSameRequestAsEmptyObject: an apply
// sent without a body and its retry with {} (or the other way round) are one
// request, as the contract reads an empty body as {}.
func TestIdempotentApplyWithAnEmptyBodyIsTheSameRequestAsEmptyObject(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	first := idemPost(e, idemApplyPath(id), nil, "apply-empty")
	idemFresh(t, first, http.StatusOK)
	idemReplay(t, idemPost(e, idemApplyPath(id), "{}", "apply-empty"), first)
	idemReplay(t, idemPost(e, idemApplyPath(id), " ", "apply-empty"), first)
	idemWant(t, idemPost(e, idemApplyPath(id), `{"confirm_deletions": []}`, "apply-empty"), http.StatusUnprocessableEntity, "idempotency_key_mismatch")
	idemAppliedOnce(t, e, id)
}

func TestIdempotentApplyReplaysStored409DeletionNotConfirmed(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	social := map[string]any{"type": "social", "display_name": "GitHub", "active": true,
		"social": map[string]any{"provider": "github", "use_own_credentials": false}}
	e.Apply(e.Plan(map[string]any{"connections": map[string]any{"github": social}}, false)["id"].(string), map[string]any{})
	id := e.Plan(map[string]any{"connections": map[string]any{"github": nil}}, false)["id"].(string)

	first := idemPost(e, idemApplyPath(id), map[string]any{}, "del-1")
	idemWant(t, first, http.StatusConflict, "deletion_not_confirmed")
	again := idemPost(e, idemApplyPath(id), map[string]any{}, "del-1")
	idemReplay(t, again, first)
	if ra := again.Header.Get("Retry-After"); ra != "" {
		t.Errorf("replayed 409 carries Retry-After %q", ra)
	}
	// The replay did not run: one rejection only.
	if got := idemEvents(t, e, id); strings.Join(got, ",") != "plan_created,apply_rejected" {
		t.Fatalf("events = %v", got)
	}
	// Another key with the confirmation runs.
	ok := idemPost(e, idemApplyPath(id), map[string]any{"confirm_deletions": []string{"connection/github"}}, "del-2")
	idemFresh(t, ok, http.StatusOK)
	idemAppliedOnce(t, e, id)
}

// TestIdempotentReplayConsumesNoRateLimit: with a quota of 3, two requests
// and any number of their replays leave exactly one request.
func TestIdempotentReplayConsumesNoRateLimit(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{RateLimit: rlConfig(3, 60, 2)})
	a := idemPost(e, "/v1/config-plans", idemPlanBody("a"), "quota-a")
	idemFresh(t, a, http.StatusCreated)
	applyA := idemPost(e, idemApplyPath(a.JSON()["id"].(string)), map[string]any{}, "quota-apply")
	idemFresh(t, applyA, http.StatusOK)
	for range 10 {
		idemReplay(t, idemPost(e, "/v1/config-plans", idemPlanBody("a"), "quota-a"), a)
		idemReplay(t, idemPost(e, idemApplyPath(a.JSON()["id"].(string)), map[string]any{}, "quota-apply"), applyA)
	}
	third := idemPost(e, "/v1/config-plans", idemPlanBody("c"), "quota-c")
	idemFresh(t, third, http.StatusCreated)
	if got := third.Header.Get("RateLimit"); !strings.HasPrefix(got, `"config_plan";r=0;`) {
		t.Errorf("third request: RateLimit %q, want r=0", got)
	}
	idemWant(t, idemPost(e, "/v1/config-plans", idemPlanBody("d"), "quota-d"), http.StatusTooManyRequests, "rate_limited")
}

func TestIdempotencyKeyReused422Mismatch(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})

	// Another body of plan creation.
	first := idemPost(e, "/v1/config-plans", idemPlanBody("orders"), "mm-create")
	idemFresh(t, first, http.StatusCreated)
	idemWant(t, idemPost(e, "/v1/config-plans", idemPlanBody("other"), "mm-create"), http.StatusUnprocessableEntity, "idempotency_key_mismatch")
	idemWant(t, idemPost(e, "/v1/config-plans", map[string]any{"config": idemDoc("orders"), "prune": true}, "mm-create"),
		http.StatusUnprocessableEntity, "idempotency_key_mismatch")
	// The same key on another endpoint.
	idemWant(t, idemPost(e, idemApplyPath(first.JSON()["id"].(string)), map[string]any{}, "mm-create"),
		http.StatusUnprocessableEntity, "idempotency_key_mismatch")
	// A mismatch is not stored: the first request is still replayed.
	idemReplay(t, idemPost(e, "/v1/config-plans", idemPlanBody("orders"), "mm-create"), first)

	// Another plan id.
	p1 := e.Plan(idemDoc("one"), false)["id"].(string)
	p2 := e.Plan(idemDoc("two"), false)["id"].(string)
	idemFresh(t, idemPost(e, idemApplyPath(p1), map[string]any{}, "mm-apply"), http.StatusOK)
	idemWant(t, idemPost(e, idemApplyPath(p2), map[string]any{}, "mm-apply"), http.StatusUnprocessableEntity, "idempotency_key_mismatch")
	// Another body of the same apply.
	idemWant(t, idemPost(e, idemApplyPath(p1), map[string]any{"confirm_deletions": []string{}}, "mm-apply"),
		http.StatusUnprocessableEntity, "idempotency_key_mismatch")

	// Another query: validate_only, then the apply itself.
	p3 := e.Plan(idemDoc("three"), false)["id"].(string)
	idemFresh(t, idemPost(e, idemApplyPath(p3)+"?validate_only=true", map[string]any{}, "mm-validate"), http.StatusOK)
	idemWant(t, idemPost(e, idemApplyPath(p3), map[string]any{}, "mm-validate"), http.StatusUnprocessableEntity, "idempotency_key_mismatch")
	idemWant(t, idemPost(e, idemApplyPath(p3)+"?validate_only=false", map[string]any{}, "mm-validate"),
		http.StatusUnprocessableEntity, "idempotency_key_mismatch")

	for _, id := range []string{p2, p3} {
		if got := idemPlan(t, e, id)["status"]; got != "planned" {
			t.Errorf("plan %s is %v after a mismatch, want planned", id, got)
		}
		if s, _, _ := idemApplied(t, e, id); s != 0 {
			t.Errorf("plan %s: %d apply_started after a mismatch", id, s)
		}
	}
}

func TestIdempotencyKeyInUse409WhileTheFirstRuns(t *testing.T) {
	t.Parallel()
	dbOpts, entered, release := idemSlowApply()
	e := apitest.Setup(t, apitest.Options{DB: dbOpts})
	defer release()
	id := e.Plan(idemDoc("orders"), false)["id"].(string)

	done := make(chan *apitest.Response, 1)
	go func() { done <- idemPost(e, idemApplyPath(id), map[string]any{}, "busy") }()
	<-entered

	busy := idemPost(e, idemApplyPath(id), map[string]any{}, "busy")
	idemWant(t, busy, http.StatusConflict, "idempotency_key_in_use")
	ra, err := strconv.Atoi(busy.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 2 {
		t.Errorf("Retry-After = %q, want 1 or 2 seconds", busy.Header.Get("Retry-After"))
	}
	if got := busy.JSON()["retry_after"]; got != float64(ra) {
		t.Errorf("retry_after = %v, want %d", got, ra)
	}
	// The key in use was checked before anything else ran: another body
	// with the same key is a mismatch.
	idemWant(t, idemPost(e, idemApplyPath(id), map[string]any{"confirm_deletions": []string{}}, "busy"),
		http.StatusUnprocessableEntity, "idempotency_key_mismatch")

	release()
	first := <-done
	idemFresh(t, first, http.StatusOK)
	// 409 idempotency_key_in_use was not stored: the retry gets the real answer.
	idemReplay(t, idemPost(e, idemApplyPath(id), map[string]any{}, "busy"), first)
	idemAppliedOnce(t, e, id)
}

// TestIdempotencyKeyNotStoredAfter429RunsOnceTheQuotaIsBack uses a quota of
// 1 per 2 s (Redis TIME: the test waits for real).
func TestIdempotencyKeyNotStoredAfter429RunsOnceTheQuotaIsBack(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{RateLimit: rlConfig(1, 2, 2)})
	e.Plan(idemDoc("first"), false)
	limited := idemPost(e, "/v1/config-plans", idemPlanBody("second"), "after-429")
	idemWant(t, limited, http.StatusTooManyRequests, "rate_limited")
	rlSleep(t, limited)
	r := idemPost(e, "/v1/config-plans", idemPlanBody("second"), "after-429")
	idemFresh(t, r, http.StatusCreated)
	idemReplay(t, idemPost(e, "/v1/config-plans", idemPlanBody("second"), "after-429"), r)
}

func TestIdempotencyKeyNotStoredAfter503RunsWhenCapacityIsBack(t *testing.T) {
	t.Parallel()
	dbOpts, entered, release := idemSlowApply()
	e := apitest.Setup(t, apitest.Options{DB: dbOpts, FleetLimit: 1})
	defer release()
	busy := e.Plan(idemDoc("busy"), false)["id"].(string)
	// Another type: applying busy does not move it.
	id := e.Plan(map[string]any{"roles": map[string]any{"admin": map[string]any{"display_name": "Admin"}}}, false)["id"].(string)
	done := make(chan *apitest.Response, 1)
	go func() { done <- idemPost(e, idemApplyPath(busy), map[string]any{}, "") }()
	<-entered

	r := idemPost(e, idemApplyPath(id), map[string]any{}, "after-503")
	idemWant(t, r, http.StatusServiceUnavailable, "service_unavailable")
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	release()
	idemFresh(t, <-done, http.StatusOK)
	idemFresh(t, idemPost(e, idemApplyPath(id), map[string]any{}, "after-503"), http.StatusOK)
	idemAppliedOnce(t, e, id)
}

func TestIdempotencyKeyScopedByAPIKey(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	other := e.Key(config.AllPermissions()...)
	mine := idemPost(e, "/v1/config-plans", idemPlanBody("orders"), "shared")
	idemFresh(t, mine, http.StatusCreated)
	theirs := idemPostAs(e, other, "/v1/config-plans", idemPlanBody("orders"), "shared")
	idemFresh(t, theirs, http.StatusCreated)
	if mine.JSON()["id"] == theirs.JSON()["id"] {
		t.Fatalf("two API keys got the same plan %v", mine.JSON()["id"])
	}
	idemReplay(t, idemPost(e, "/v1/config-plans", idemPlanBody("orders"), "shared"), mine)
	idemReplay(t, idemPostAs(e, other, "/v1/config-plans", idemPlanBody("orders"), "shared"), theirs)
	// An apply: the other API key's request with the same key and body runs
	// (and finds the plan applied) instead of being replayed.
	path := idemApplyPath(mine.JSON()["id"].(string))
	idemFresh(t, idemPost(e, path, map[string]any{}, "shared-apply"), http.StatusOK)
	idemWant(t, idemPostAs(e, other, path, map[string]any{}, "shared-apply"), http.StatusConflict, "config_plan_not_applicable")
}

// TestIdempotentApplyReplayedFromPostgresWhenRedisLostTheRecord: the plan
// keeps the fingerprint of the request that applied it.
func TestIdempotentApplyReplayedFromPostgresWhenRedisLostTheRecord(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	e.RequireRedis() // deletes Redis records
	other := e.Key(config.AllPermissions()...)
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	first := idemPost(e, idemApplyPath(id), map[string]any{}, "pg-1")
	idemFresh(t, first, http.StatusOK)

	if n := idemDelete(t, e.Redis, e.Prefix+"idem:*"); n != 1 {
		t.Fatalf("deleted %d idempotency records, want 1", n)
	}
	again := idemPost(e, idemApplyPath(id), map[string]any{}, "pg-1")
	idemReplay(t, again, first)
	// The replay from PostgreSQL is stored again in Redis.
	idemReplay(t, idemPost(e, idemApplyPath(id), map[string]any{}, "pg-1"), first)
	idemAppliedOnce(t, e, id)

	idemDelete(t, e.Redis, e.Prefix+"idem:*")
	// Another key, another API key with the same key, another body: the
	// plan is applied, row 9.
	for _, r := range []*apitest.Response{
		idemPost(e, idemApplyPath(id), map[string]any{}, "pg-2"),
		idemPostAs(e, other, idemApplyPath(id), map[string]any{}, "pg-1"),
		idemPost(e, idemApplyPath(id), map[string]any{"confirm_deletions": []string{}}, "pg-1"),
		idemPost(e, idemApplyPath(id), map[string]any{}, ""),
	} {
		idemWant(t, r, http.StatusConflict, "config_plan_not_applicable")
		if got := r.JSON()["plan_status"]; got != "applied" {
			t.Errorf("plan_status = %v", got)
		}
	}
	idemAppliedOnce(t, e, id)
}

// TestIdempotencyKeyInUseFromPostgresWhenRedisLostTheRecordMidApply: while
// the first request applies, a retry that finds no Redis record is told
// the key is in use, never config_plan_not_applicable.
func TestIdempotencyKeyInUseFromPostgresWhenRedisLostTheRecordMidApply(t *testing.T) {
	t.Parallel()
	dbOpts, entered, release := idemSlowApply()
	e := apitest.Setup(t, apitest.Options{DB: dbOpts})
	e.RequireRedis() // deletes Redis records
	defer release()
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	done := make(chan *apitest.Response, 1)
	go func() { done <- idemPost(e, idemApplyPath(id), map[string]any{}, "pg-busy") }()
	<-entered

	idemDelete(t, e.Redis, e.Prefix+"idem:*")
	for range 3 {
		r := idemPost(e, idemApplyPath(id), map[string]any{}, "pg-busy")
		idemWant(t, r, http.StatusConflict, "idempotency_key_in_use")
		if r.Header.Get("Retry-After") != "1" {
			t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
		}
	}
	// Another key sees the plan being applied.
	r := idemPost(e, idemApplyPath(id), map[string]any{}, "pg-other")
	idemWant(t, r, http.StatusConflict, "config_plan_not_applicable")
	if got := r.JSON()["plan_status"]; got != "applying" {
		t.Errorf("plan_status = %v", got)
	}

	release()
	first := <-done
	idemFresh(t, first, http.StatusOK)
	idemReplay(t, idemPost(e, idemApplyPath(id), map[string]any{}, "pg-busy"), first)
	idemAppliedOnce(t, e, id)
}

// TestSameKeyRacedOnTwoReplicasAppliesOnce sends one apply with one key to
// two instances at once, for several plans.
func TestSameKeyRacedOnTwoReplicasAppliesOnce(t *testing.T) {
	t.Parallel()
	e1 := apitest.Setup(t, apitest.Options{})
	e2 := apitest.Setup(t, apitest.Options{Replica: e1})
	for i := range 5 {
		id := e1.Plan(idemDoc("race"+strconv.Itoa(i)), false)["id"].(string)
		key := "race-" + strconv.Itoa(i)
		start := make(chan struct{})
		answers := make([]*apitest.Response, 2)
		var wg sync.WaitGroup
		for j, e := range []*apitest.Env{e1, e2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				answers[j] = idemPost(e, idemApplyPath(id), map[string]any{}, key)
			}()
		}
		close(start)
		wg.Wait()
		fresh := 0
		for _, r := range answers {
			switch {
			case r.Status == http.StatusOK && !idemReplayed(r):
				fresh++
			case r.Status == http.StatusOK, r.Status == http.StatusConflict && r.Code() == "idempotency_key_in_use":
			default:
				t.Fatalf("plan %d: answer %d %s", i, r.Status, r.Body)
			}
		}
		if fresh != 1 {
			t.Fatalf("plan %d: %d first answers, want 1", i, fresh)
		}
		idemAppliedOnce(t, e1, id)
	}
}

// TestRetryStormOnTwoReplicasWithRedisFlushedAppliesOnce: 100 requests of
// one apply with one key over two instances, while the first is held
// inside its transaction; the test's Redis key space is deleted twice on
// the way (once during the apply, once after).
func TestRetryStormOnTwoReplicasWithRedisFlushedAppliesOnce(t *testing.T) {
	t.Parallel()
	dbOpts, entered, release := idemSlowApply()
	e1 := apitest.Setup(t, apitest.Options{DB: dbOpts})
	e2 := apitest.Setup(t, apitest.Options{Replica: e1, DB: dbOpts})
	defer release()
	id := e1.Plan(idemDoc("storm"), false)["id"].(string)
	path := idemApplyPath(id)

	type answer struct {
		n int
		r *apitest.Response
	}
	jobs := make(chan int)
	answers := make(chan answer, 100)
	var wg sync.WaitGroup
	for range 8 {
		go func() {
			for n := range jobs {
				e := []*apitest.Env{e1, e2}[n%2]
				answers <- answer{n, idemPost(e, path, map[string]any{}, "storm")}
				wg.Done()
			}
		}()
	}
	defer close(jobs)
	send := func(from, to int) {
		for n := from; n < to; n++ {
			wg.Add(1)
			jobs <- n
		}
	}

	go func() { answers <- answer{0, idemPost(e1, path, map[string]any{}, "storm")} }()
	<-entered // the first request is held inside its transaction
	send(1, 21)
	wg.Wait() // 1..20: the Redis record is in flight
	if n := idemDelete(t, e1.Redis, e1.Prefix+"*"); n == 0 {
		t.Fatal("nothing to delete under the test's prefix")
	}
	send(21, 41)
	wg.Wait() // 21..40: no Redis record, the plan says applying
	release()
	for len(answers) < 41 {
		time.Sleep(5 * time.Millisecond) // until the first request has its answer
	}
	send(41, 70)
	wg.Wait()
	idemDelete(t, e1.Redis, e1.Prefix+"*")
	send(70, 100)
	wg.Wait()
	close(answers)

	var first *apitest.Response
	byN := map[int]*apitest.Response{}
	for a := range answers {
		byN[a.n] = a.r
	}
	if len(byN) != 100 {
		t.Fatalf("%d answers, want 100", len(byN))
	}
	for n := 0; n < 100; n++ {
		r := byN[n]
		switch {
		case r.Status == http.StatusOK && !idemReplayed(r):
			if first != nil {
				t.Fatalf("request %d applied again: %s", n, r.Body)
			}
			first = r
		case r.Status == http.StatusOK:
		case r.Status == http.StatusConflict && r.Code() == "idempotency_key_in_use":
			// Also after the first answered, while a concurrent retry holds
			// a new record after a flush.
		default:
			t.Errorf("request %d: %d %s", n, r.Status, r.Body)
		}
		if n >= 1 && n <= 40 && r.Code() != "idempotency_key_in_use" {
			t.Errorf("request %d during the apply: %d %s", n, r.Status, r.Body)
		}
	}
	if first == nil || byN[0] != first {
		t.Fatalf("the first request did not get the first answer: %d %s", byN[0].Status, byN[0].Body)
	}
	for n, r := range byN {
		if r.Status == http.StatusOK && !bytes.Equal(r.Body, first.Body) {
			t.Errorf("request %d: body %s\nwant %s", n, r.Body, first.Body)
		}
	}
	idemAppliedOnce(t, e1, id)
}

// TestIdempotentApplyReplayedFromPostgresConsumesNoRateLimit: the quota is
// used up, yet the retry of the applying key is answered.
func TestIdempotentApplyReplayedFromPostgresConsumesNoRateLimit(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{RateLimit: rlConfig(2, 60, 2)})
	id := e.Plan(idemDoc("orders"), false)["id"].(string)
	first := idemPost(e, idemApplyPath(id), map[string]any{}, "pg-quota")
	idemFresh(t, first, http.StatusOK)
	if n := idemDelete(t, e.Redis, e.Prefix+"idem:*"); n != 1 {
		t.Fatalf("deleted %d idempotency records, want 1", n)
	}
	idemReplay(t, idemPost(e, idemApplyPath(id), map[string]any{}, "pg-quota"), first)
	// Anything else is over the quota.
	idemWant(t, idemPost(e, idemApplyPath(id), map[string]any{}, "pg-other"), http.StatusTooManyRequests, "rate_limited")
}
