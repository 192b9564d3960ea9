package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

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
