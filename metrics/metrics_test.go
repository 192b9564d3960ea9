package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/plans"
)

func TestPlanSizeBucketsByChanges(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "1", 1: "1", 2: "10", 10: "10", 11: "100", 100: "100", 101: "1000", 1000: "1000", 1001: "more"} {
		if got := PlanSize(n); got != want {
			t.Errorf("PlanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLabelValuesOutsideTheirSetsAreNotKept(t *testing.T) {
	t.Parallel()
	m := New()
	h := m.Plans(plans.Hooks{})
	h.OnApply(plans.ApplyObservation{Outcome: "cfgp_01hzzzzzzzzzzzzzzzzzzzzzzz", Changes: 3})
	h.OnPlanCreated("env_01hzzzzzzzzzzzzzzzzzzzzzzz")
	sh := m.Service()
	sh.OnRequestStart()
	sh.OnRequest("BREW", "/v1/config", 418, time.Millisecond)
	sh.OnIdempotency("key_01hzzzzzzzzzzzzzzzzzzzzzzz")
	sh.OnRateLimit("limited", "env_01hzzzzzzzzzzzzzzzzzzzzzzz")
	sh.OnLeaseLost("whatever")
	if got := counterValue(t, m.applies.WithLabelValues("internal_error", "apply")); got != 1 {
		t.Errorf("apply with an unknown code counted as internal_error %v times, want 1", got)
	}
	if got := counterValue(t, m.planCreations.WithLabelValues("internal_error")); got != 1 {
		t.Errorf("plan creation with an unknown code counted as internal_error %v times, want 1", got)
	}
	if got := counterValue(t, m.idempotency.WithLabelValues("other")); got != 1 {
		t.Errorf("unknown idempotency outcome counted as other %v times, want 1", got)
	}
	if got := counterValue(t, m.rateLimit.WithLabelValues("limited", "other")); got != 1 {
		t.Errorf("unknown policy counted as other %v times, want 1", got)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if !strings.Contains(body, `keenauthd_http_request_duration_seconds_count{method="other",route="/v1/config",status_class="4xx"} 1`) {
		t.Errorf("the request is not in the exposition:\n%s", body)
	}
	for _, id := range []string{"cfgp_", "env_", "key_", "whatever"} {
		if strings.Contains(body, id) {
			t.Errorf("the exposition holds %q", id)
		}
	}
}

func TestAppliedPlansAreTimedBySize(t *testing.T) {
	t.Parallel()
	m := New()
	var seen []plans.ApplyObservation
	h := m.Plans(plans.Hooks{OnApply: func(o plans.ApplyObservation) { seen = append(seen, o) }})
	h.OnApply(plans.ApplyObservation{Outcome: "applied", Changes: 42, Duration: 2 * time.Second})
	h.OnApply(plans.ApplyObservation{Outcome: "config_conflict"})
	h.OnApply(plans.ApplyObservation{Outcome: "validated", ValidateOnly: true, Changes: 3})
	if len(seen) != 3 {
		t.Errorf("the hook already set saw %d applies, want 3", len(seen))
	}
	if n := seriesCount(m.applyDuration); n != 1 {
		t.Errorf("apply duration series = %d, want only the applied plan's", n)
	}
	if got := counterValue(t, m.applies.WithLabelValues("validated", "validate_only")); got != 1 {
		t.Errorf("validated = %v, want 1", got)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `keenauthd_apply_duration_seconds_bucket{plan_size="100",le="2.5"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("exposition lacks %s", want)
	}
}

type fakeFederation struct{ err error }

func (f fakeFederation) PutOIDC(context.Context, string, string, federation.Material, string) error {
	return f.err
}
func (f fakeFederation) GetOIDC(context.Context, string, string) (federation.Stored, error) {
	return federation.Stored{}, f.err
}
func (f fakeFederation) TestOIDC(context.Context, string, string) (bool, *string, error) {
	return true, nil, f.err
}

func TestFederationCallsByOperationAndOutcome(t *testing.T) {
	t.Parallel()
	m := New()
	cases := []struct {
		err     error
		outcome string
	}{
		{nil, "ok"},
		{&federation.RejectedError{Errors: []federation.FieldError{{Pointer: "/issuer", Code: "invalid"}}}, "rejected"},
		{fmt.Errorf("PUT: %w", federation.ErrUnavailable), "unavailable"},
		{federation.ErrNotFound, "not_found"},
		{federation.ErrUnauthorized, "unauthorized"},
		{context.Canceled, "canceled"},
		{errors.New("boom"), "error"},
	}
	for _, c := range cases {
		f := m.Federation(fakeFederation{c.err})
		if err := f.PutOIDC(context.Background(), "env_x", "con_x", federation.Material{}, "s"); !errors.Is(err, c.err) && err != c.err {
			t.Errorf("PutOIDC returned %v, want %v", err, c.err)
		}
		_, _ = f.GetOIDC(context.Background(), "env_x", "con_x")
		_, _, _ = f.TestOIDC(context.Background(), "env_x", "con_x")
		for _, op := range []string{"put_oidc", "get_oidc", "test_oidc"} {
			h := m.federation.WithLabelValues(op, c.outcome)
			if got := histogramCount(t, h); got != 1 {
				t.Errorf("%s %s count = %d, want 1", op, c.outcome, got)
			}
		}
	}
}
