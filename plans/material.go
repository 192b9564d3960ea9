package plans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
)

// writeMaterial is the second phase of an apply with OIDC material: once the
// connection records are committed, each change's material and client secret
// go to the federation service. If every write is confirmed the plan becomes
// applied; otherwise it returns to planned with a federation_failed event,
// and the apply answers 422 or 503. What the transaction wrote stays
// committed, and so does every material write that was confirmed.
//
// A 422 of the federation service is reported where the request or the plan
// holds the refused value: /changes/<i>/spec/oidc/… for the material,
// /sp_host for the redirect URI built from it, and /resolved_secrets/<NAME>
// for the client secret.
//
// The federation service refusing our bearer token (federation.ErrUnauthorized)
// is a configuration error of this service (KEENAUTHD_FEDERATION_TOKEN), not
// a problem of the request: the client gets 503 service_unavailable, as for
// any federation outage, since nothing it can change in its request would
// help, and the error is logged at ERROR level so that an operator fixes it.
//
// The records are committed: the writes go on when the client stops
// waiting, each bounded by the federation client's timeouts, and each renews
// the plan's apply lease first, so that no other apply takes the plan while
// slow writes add up past the lease.
func (s *Service) writeMaterial(ctx context.Context, a Actor, p *Plan, req *ApplyRequest, token string, out *applied) error {
	ctx = context.WithoutCancel(ctx)
	var o materialOutcome
	for i, c := range p.Changes {
		if !c.WritesMaterial {
			continue
		}
		if o.unavailable != nil {
			// The other writes would wait for the same outage; the new
			// plan writes every material still missing.
			break
		}
		if err := s.db.Write(ctx, func(tx *configdb.Tx) error { return tx.RenewLease(ctx, p.key(), token, s.cfg.ApplyLease) }); err != nil {
			s.log.WarnContext(ctx, "renewing the apply lease failed", "plan_id", p.ID, "error", err)
		}
		v := config.ViewConnection(c.Spec)
		var m config.OIDCMaterial
		_ = json.Unmarshal(v.OIDC, &m)
		if !config.IsPublicHostURL(m.Issuer) {
			// Plan creation refuses such an issuer (§23), but a plan can
			// carry one it did not validate: oidc: null keeps a stored
			// spec from before that rule. It never reaches the
			// federation service, which fetches issuers.
			o.rejected = append(o.rejected, config.FieldError{Pointer: fmt.Sprintf("/changes/%d/spec/oidc/issuer", i), Code: config.CodeInvalid, Detail: config.InternalHostDetail})
			continue
		}
		conID := out.connIDs[c.Key]
		material := federation.Material{Issuer: m.Issuer, ClientID: m.ClientID, Scopes: m.Scopes,
			RedirectURI: "https://" + *req.SPHost + "/sso/" + conID + "/callback"}
		err := s.fed.PutOIDC(ctx, a.EnvironmentID, conID, material, req.Secret(c.SecretRef))
		var rej *federation.RejectedError
		switch {
		case err == nil:
			err := s.db.Write(ctx, func(tx *configdb.Tx) error {
				return tx.ConfirmMaterial(ctx, a.EnvironmentID, conID, config.MaterialHash(v.OIDC))
			})
			if err != nil {
				o.unavailable = err
			}
		case errors.As(err, &rej):
			o.rejected = append(o.rejected, rejectedMaterial(i, c, rej)...)
			o.truncated = o.truncated || rej.Truncated
		case errors.Is(err, federation.ErrUnauthorized):
			logTokenRefused(ctx, s.log, err, "plan_id", p.ID, "connection_id", conID)
			o.unavailable = err
		default:
			s.log.WarnContext(ctx, "federation write failed", "plan_id", p.ID, "connection_id", conID, "error", err)
			o.unavailable = err
		}
	}
	if len(o.rejected) == 0 && o.unavailable == nil {
		return s.db.InTxDetached(ctx, func(tx *configdb.Tx) error {
			// The event is recorded even if the lease was lost meanwhile:
			// every write of the apply was made.
			if _, err := tx.FinishPlan(ctx, p.key(), token); err != nil {
				return err
			}
			return recordEvent(ctx, tx, a, p.ID, "apply_succeeded", map[string]any{"revision_id": out.revisionID})
		})
	}
	answer, event := o.failure()
	err := s.db.InTxDetached(ctx, func(tx *configdb.Tx) error {
		if _, err := tx.ReleasePlan(ctx, p.key(), token); err != nil {
			return err
		}
		event["code"], event["errors"] = answer.Code, answer.Errors
		return recordEvent(ctx, tx, a, p.ID, "federation_failed", event)
	})
	if err != nil {
		s.log.WarnContext(ctx, "recording a federation failure failed; the plan's lease will return it to planned", "plan_id", p.ID, "error", err)
	}
	return answer
}

// materialOutcome is what the material writes of an apply came to: the
// problems the federation service found (truncated: it cut their list),
// and the error of a write it could not take.
type materialOutcome struct {
	rejected    []config.FieldError
	truncated   bool
	unavailable error
}

// failure is the answer to an apply whose material writes did not all go
// through (422 for rejected material, else 503), and the data of its
// federation_failed event so far.
func (o materialOutcome) failure() (*config.Error, map[string]any) {
	event := map[string]any{}
	if len(o.rejected) > 0 {
		rejected, truncated := capRejected(o.rejected, o.truncated)
		answer := config.Problems(config.CodeValidationFailed, rejected)
		if truncated {
			answer.Extra = map[string]any{"errors_truncated": true}
			event["errors_truncated"] = true
		}
		return answer, event
	}
	return &config.Error{Code: config.CodeServiceUnavailable, Detail: "the federation service is temporarily unavailable; only the connection records were written",
		Extra: map[string]any{"retry_after": 5}}, event
}

// rejectedMaterial locates the problems of material the federation service
// refused for change i where the request or the plan holds the value.
func rejectedMaterial(i int, c Change, rej *federation.RejectedError) []config.FieldError {
	var out []config.FieldError
	for _, fe := range rej.Errors {
		ptr := fmt.Sprintf("/changes/%d/spec/oidc", i) + fe.Pointer
		switch fe.Pointer {
		case "/redirect_uri":
			ptr = "/sp_host"
		case "/client_secret":
			ptr = config.Pointer("resolved_secrets", c.SecretRef)
		}
		out = append(out, config.FieldError{Pointer: ptr, Code: config.Code(fe.Code), Detail: "the federation service refused the OIDC material"})
	}
	if len(rej.Errors) == 0 {
		out = append(out, config.FieldError{Pointer: fmt.Sprintf("/changes/%d/spec/oidc", i), Code: config.CodeRejected, Detail: "the federation service refused the OIDC material"})
	}
	return out
}

// capRejected drops the repeated problems of the federation service's 422s
// and keeps at most federation.MaxRejectedErrors of them for the whole
// apply (§23); truncated reports that some were left out, here or by the
// federation client already.
func capRejected(errs []config.FieldError, truncated bool) ([]config.FieldError, bool) {
	type problem struct {
		pointer string
		code    config.Code
	}
	seen := make(map[problem]bool, len(errs))
	out := make([]config.FieldError, 0, min(len(errs), federation.MaxRejectedErrors))
	for _, fe := range errs {
		p := problem{fe.Pointer, fe.Code}
		if seen[p] {
			continue
		}
		if len(out) == federation.MaxRejectedErrors {
			return out, true
		}
		seen[p] = true
		out = append(out, fe)
	}
	return out, truncated
}

// logTokenRefused logs, at ERROR level, that the federation service refused
// our bearer token: an operator must fix KEENAUTHD_FEDERATION_TOKEN.
func logTokenRefused(ctx context.Context, log *slog.Logger, err error, attrs ...any) {
	log.ErrorContext(ctx, "federation service refused our token; check KEENAUTHD_FEDERATION_TOKEN", append(attrs, "error", err)...)
}
