package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// panicOnce returns a function that panics the first time it is called and
// does nothing after.
func panicOnce() (fn func(), calls *atomic.Int32) {
	calls = &atomic.Int32{}
	return func() {
		if calls.Add(1) == 1 {
			panic("injected panic")
		}
	}, calls
}

// panicPost sends a POST with an Idempotency-Key that the test expects to
// panic, and fails t unless the answer is the 500 problem. It goes around
// e.Do, whose contract checks refuse every 500.
func panicPost(t *testing.T, e *apitest.Env, path string, body any, key string) {
	t.Helper()
	j, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(j))
	req.Header.Set("Authorization", "Bearer "+e.Secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	e.Handler.ServeHTTP(rec, req)
	r := &apitest.Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	idemWant(t, r, http.StatusInternalServerError, "internal_error")
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if !strings.Contains(e.Logs.String(), "injected panic") {
		t.Fatalf("the panic was not logged:\n%s", e.Logs.String())
	}
}

// TestIdempotencyKeyReleasedWhenPlanCreationPanics: a plan creation with an
// Idempotency-Key whose handling panics answers the 500 problem, and the
// key is free at once: the retry runs (201), not 409 idempotency_key_in_use
// for the lease (10 s here) of a request that is gone.
func TestIdempotencyKeyReleasedWhenPlanCreationPanics(t *testing.T) {
	t.Parallel()
	boom, calls := panicOnce()
	e := apitest.Setup(t, apitest.Options{Hooks: plans.Hooks{OnPlanCreated: func(string) { boom() }}})

	panicPost(t, e, "/v1/config-plans", idemPlanBody("orders"), "panic-create")
	retry := idemPost(e, "/v1/config-plans", idemPlanBody("orders"), "panic-create")
	idemFresh(t, retry, http.StatusCreated)
	if n := calls.Load(); n != 2 {
		t.Fatalf("plan creations run = %d, want 2", n)
	}
	idemReplay(t, idemPost(e, "/v1/config-plans", idemPlanBody("orders"), "panic-create"), retry)
}

// TestIdempotencyKeyAndPlanReleasedWhenApplyPanics: an apply with an
// Idempotency-Key that panics inside its transaction answers the 500
// problem and leaves neither the key nor the plan held: the retry with the
// same key applies the plan, once.
func TestIdempotencyKeyAndPlanReleasedWhenApplyPanics(t *testing.T) {
	t.Parallel()
	boom, calls := panicOnce()
	e := apitest.Setup(t, apitest.Options{DB: configdb.Options{BeforeApplyWrite: func(*gorm.DB) error { boom(); return nil }}})
	id := e.Plan(idemDoc("orders"), false)["id"].(string)

	panicPost(t, e, idemApplyPath(id), map[string]any{}, "panic-apply")
	if st := idemPlan(t, e, id)["status"]; st != "planned" {
		t.Fatalf("plan after the panic = %v, want planned", st)
	}
	retry := idemPost(e, idemApplyPath(id), map[string]any{}, "panic-apply")
	idemFresh(t, retry, http.StatusOK)
	if retry.JSON()["status"] != "applied" || calls.Load() != 2 {
		t.Fatalf("retry = %s after %d applies", retry.Body, calls.Load())
	}
	if _, revs, logs := idemApplied(t, e, id); revs != 1 || logs != 1 {
		t.Fatalf("%d revisions and %d config.applied, want one each", revs, logs)
	}
	if ev := idemEvents(t, e, id); !slices.Equal(ev, []string{"plan_created", "apply_started", "apply_rejected", "apply_started", "apply_succeeded"}) {
		t.Fatalf("events = %v", ev)
	}
	idemReplay(t, idemPost(e, idemApplyPath(id), map[string]any{}, "panic-apply"), retry)
}
