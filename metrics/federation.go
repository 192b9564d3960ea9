package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/keenauth/configplans/federation"
)

// Federation wraps a federation client so that every call is timed by
// operation (put_oidc, get_oidc, test_oidc) and outcome (ok, rejected,
// not_found, unauthorized, unavailable, canceled, error).
func (m *Metrics) Federation(c federation.Client) federation.Client {
	if !federation.Configured(c) {
		return c // nothing is called: the domain refuses first
	}
	return &timedFederation{next: c, m: m}
}

type timedFederation struct {
	next federation.Client
	m    *Metrics
}

func (t *timedFederation) observe(op string, start time.Time, err error) {
	t.m.federation.WithLabelValues(op, federationOutcome(err)).Observe(time.Since(start).Seconds())
}

func (t *timedFederation) PutOIDC(ctx context.Context, env, connectionID string, m federation.Material, clientSecret string) error {
	start := time.Now()
	err := t.next.PutOIDC(ctx, env, connectionID, m, clientSecret)
	t.observe("put_oidc", start, err)
	return err
}

func (t *timedFederation) GetOIDC(ctx context.Context, env, connectionID string) (federation.Stored, error) {
	start := time.Now()
	s, err := t.next.GetOIDC(ctx, env, connectionID)
	t.observe("get_oidc", start, err)
	return s, err
}

func (t *timedFederation) TestOIDC(ctx context.Context, env, connectionID string) (bool, *string, error) {
	start := time.Now()
	ok, reason, err := t.next.TestOIDC(ctx, env, connectionID)
	t.observe("test_oidc", start, err)
	return ok, reason, err
}

func federationOutcome(err error) string {
	var rej *federation.RejectedError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &rej):
		return "rejected"
	case errors.Is(err, federation.ErrNotFound):
		return "not_found"
	case errors.Is(err, federation.ErrUnauthorized):
		return "unauthorized"
	case errors.Is(err, federation.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "error"
}
