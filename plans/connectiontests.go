package plans

import (
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
)

// Connections are the tests of enterprise connections: a test asks the
// federation service to try a connection's confirmed OIDC material.
type Connections struct{ core }

// ConnectionTest is the result of a connection test.
type ConnectionTest struct {
	Connection string  `json:"connection"`
	Status     string  `json:"status"`
	Reason     *string `json:"reason"`
	TestedAt   Time    `json:"tested_at"`
}

// ForgetConfirmedMaterial drops every confirmation of OIDC material: the
// federation service that held it starts empty (the in-process one of dev
// mode), so the planner plans the material again.
func (s *Connections) ForgetConfirmedMaterial(ctx context.Context) error {
	return s.db.ForgetMaterials(ctx)
}

// TestConnection asks the federation service to test an enterprise
// connection's current OIDC material and records the result against a hash
// of that material, so that a later change of the material makes it stale.
func (s *Connections) TestConnection(ctx context.Context, a Actor, key string) (*ConnectionTest, error) {
	if err := a.Require("connections:write"); err != nil {
		return nil, err
	}
	notFound := &config.Error{Code: config.CodeNotFound, Detail: "no such connection"}
	if !config.ResourceKey.MatchString(key) {
		return nil, notFound
	}
	r, err := s.db.LoadResource(ctx, a.EnvironmentID, string(config.KindConnection), key)
	if isNotFound(err) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	v := config.ViewConnection(json.RawMessage(config.Canonical(r.Spec)))
	if v.Type != "enterprise" || v.OIDC == nil {
		return nil, &config.Error{Code: config.CodeConnectionNotTestable, Detail: "only an enterprise connection with OIDC material can be tested"}
	}
	hash := config.MaterialHash(v.OIDC)
	material, err := s.db.ConfirmedMaterial(ctx, a.EnvironmentID)
	if err != nil {
		return nil, err
	}
	if material[r.ResourceID] != hash {
		return nil, &config.Error{Code: config.CodeConnectionNotTestable, Detail: "the federation service has not confirmed this connection's OIDC material yet"}
	}
	if !federation.Configured(s.fed) {
		return nil, &config.Error{Code: config.CodeServiceUnavailable, Detail: "no federation service is configured", Extra: map[string]any{"retry_after": 60}}
	}
	ok, reason, err := s.fed.TestOIDC(ctx, a.EnvironmentID, r.ResourceID)
	switch {
	case errors.Is(err, federation.ErrNotFound):
		return nil, &config.Error{Code: config.CodeConnectionNotTestable, Detail: "the federation service holds no OIDC material for this connection"}
	case errors.Is(err, federation.ErrUnauthorized):
		// Our configuration, not the request: 503, logged for an operator
		// (see writeMaterial).
		logTokenRefused(ctx, s.log, err, "connection_id", r.ResourceID)
		return nil, &config.Error{Code: config.CodeServiceUnavailable, Detail: "the federation service is temporarily unavailable", Extra: map[string]any{"retry_after": 5}}
	case err != nil:
		s.log.WarnContext(ctx, "connection test failed", "connection_id", r.ResourceID, "error", err)
		return nil, &config.Error{Code: config.CodeServiceUnavailable, Detail: "the federation service is temporarily unavailable", Extra: map[string]any{"retry_after": 5}}
	}
	res := &ConnectionTest{Connection: key, Status: "succeeded", TestedAt: Time(s.now())}
	if !ok {
		res.Status = "failed"
		res.Reason = capReason(reason)
		if res.Reason == nil {
			r := "the identity provider did not accept the material"
			res.Reason = &r
		}
	}
	err = s.db.Write(ctx, func(tx *configdb.Tx) error {
		return tx.RecordConnectionTest(ctx, a.EnvironmentID, r.ResourceID, configdb.ConnectionTest{MaterialHash: hash, Status: res.Status, Reason: res.Reason})
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// MaxTestReason is how many characters of a failed test's reason are kept
// and returned (§23): the reason comes from the federation service, which
// may quote whatever the identity provider answered.
const MaxTestReason = 1024

// capReason cuts a reason to its first MaxTestReason characters.
func capReason(reason *string) *string {
	if reason == nil || utf8.RuneCountInString(*reason) <= MaxTestReason {
		return reason
	}
	r := *reason
	n := 0
	for i := range r {
		if n == MaxTestReason {
			r = r[:i]
			break
		}
		n++
	}
	return &r
}
