// Package federation talks to the federation service, the external HTTP
// service that holds the OIDC material of enterprise connections and their
// client secrets (SPEC §8).
//
// Two implementations of Client: HTTPClient for production, and InProcess,
// the dev-mode stand-in that accepts any well-formed material. A fake of the
// HTTP service for tests lives in test/fakefederation.
//
// The client secret is write-only here: it is sent in the body of a PUT and
// nowhere else. No error, log line or panic of this package carries it; errors
// name methods, paths and status codes only, and this package does not log.
package federation

import (
	"context"
	"errors"
	"strings"
)

// Material is the OIDC material of an enterprise connection, without its
// client secret.
type Material struct {
	Issuer      string   `json:"issuer"`
	ClientID    string   `json:"client_id"`
	Scopes      []string `json:"scopes"`
	RedirectURI string   `json:"redirect_uri"`
}

// Stored is the material as the federation service holds it. The secret
// itself is never read back: SecretSet only says that one was written.
type Stored struct {
	Material
	SecretSet bool `json:"secret_set"`
}

// FieldError is one problem the federation service found in the material.
// Pointer is an RFC 6901 JSON pointer relative to the material ("/issuer",
// "/scopes/1", "" for the material as a whole); the caller prefixes it with
// the position of the material in its own document.
type FieldError struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
}

// RejectedError is a 422 from the federation service: the material was
// refused and retrying the same write cannot succeed. It is returned as
// *RejectedError; use errors.As.
type RejectedError struct {
	Errors []FieldError
	// Truncated reports that the answer named more than MaxRejectedErrors
	// distinct problems: Errors holds the first of them (§23).
	Truncated bool
}

// MaxRejectedErrors is how many distinct problems of a 422 are kept: the
// answer, the event and the idempotency record of an apply hold them, and
// a faulty or hostile service could send hundreds of thousands.
const MaxRejectedErrors = 100

func (e *RejectedError) Error() string {
	var b strings.Builder
	b.WriteString("federation service rejected the OIDC material")
	for i, fe := range e.Errors {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		p := fe.Pointer
		if p == "" {
			p = "(material)"
		}
		b.WriteString(p + " " + fe.Code)
	}
	return b.String()
}

var (
	// ErrUnavailable: the federation service answered 5xx, 408 or 429, did
	// not answer in time, could not be reached, or gave an answer that could
	// not be parsed. The write may be retried later. Errors wrap it with the
	// method, path and status or cause.
	ErrUnavailable = errors.New("federation service unavailable")

	// ErrNotFound: the federation service holds no OIDC material for the
	// connection (404).
	ErrNotFound = errors.New("federation service has no OIDC material for the connection")

	// ErrUnauthorized: the federation service refused our bearer token (401
	// or 403). This is a configuration problem of this service
	// (KEENAUTHD_FEDERATION_TOKEN), never retried.
	ErrUnauthorized = errors.New("federation service refused the token")
)

// Client writes, reads and tests the OIDC material of a connection.
// env is an environment id (env_…), connectionID a connection id (con_…).
type Client interface {
	// PutOIDC writes the material and its client secret, replacing what the
	// service held. It is idempotent. Errors: *RejectedError, ErrUnavailable,
	// ErrNotFound, ErrUnauthorized, or a context error.
	PutOIDC(ctx context.Context, env, connectionID string, m Material, clientSecret string) error
	// GetOIDC reads the stored material. ErrNotFound when there is none.
	GetOIDC(ctx context.Context, env, connectionID string) (Stored, error)
	// TestOIDC asks the service to test the stored material against the
	// identity provider. ok reports the outcome and reason, when not nil,
	// why it failed. ErrNotFound when there is no material.
	TestOIDC(ctx context.Context, env, connectionID string) (ok bool, reason *string, err error)
}

var (
	_ Client = (*HTTPClient)(nil)
	_ Client = (*InProcess)(nil)
)

// errInvalidID is a programming error of the caller: an id that cannot be a
// path segment.
var errInvalidID = errors.New("federation: environment and connection ids must be non-empty path segments")

func checkIDs(env, connectionID string) error {
	for _, id := range []string{env, connectionID} {
		if id == "" || id == "." || id == ".." {
			return errInvalidID
		}
	}
	return nil
}
