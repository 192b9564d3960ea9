package plans

import (
	"context"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// maxClockSkew is how far in the future a reported token time may be.
const maxClockSkew = 5 * time.Minute

// TokenActivity is the body of POST /internal/v1/token-activity.
type TokenActivity struct {
	EnvironmentID  string    `json:"environment_id"`
	ApplicationKey string    `json:"application_key"`
	IssuedAt       time.Time `json:"issued_at"`
}

// DecodeTokenActivity strictly decodes the body of
// POST /internal/v1/token-activity, as a document is decoded: an unknown,
// repeated or case-variant member gives an *Error unknown_field or
// malformed_request, and so do a value of the wrong type (issued_at is an
// RFC 3339 time) and data after the object.
func DecodeTokenActivity(raw []byte) (TokenActivity, error) {
	var ta TokenActivity
	if err := config.DecodeObject(raw, &ta); err != nil {
		return TokenActivity{}, err
	}
	return ta, nil
}

// RecordTokenActivity keeps the latest token time per application.
func (s *Environments) RecordTokenActivity(ctx context.Context, ta TokenActivity) error {
	var problems []config.FieldError
	if !config.ValidID(config.PrefixEnvironment, ta.EnvironmentID) {
		problems = append(problems, config.FieldError{Pointer: "/environment_id", Code: config.CodeInvalid, Detail: "an environment id (env_…)"})
	}
	if !config.ResourceKey.MatchString(ta.ApplicationKey) {
		problems = append(problems, config.FieldError{Pointer: "/application_key", Code: config.CodeInvalid, Detail: "an application key"})
	}
	switch {
	case ta.IssuedAt.IsZero():
		problems = append(problems, config.FieldError{Pointer: "/issued_at", Code: config.CodeRequired, Detail: "an RFC 3339 time"})
	case ta.IssuedAt.After(s.now().Add(maxClockSkew)):
		// A time in the future would protect the application's deletion
		// for as long as it lies ahead.
		problems = append(problems, config.FieldError{Pointer: "/issued_at", Code: config.CodeInFuture,
			Detail: "issued_at is in the future, past the clock skew allowed"})
	}
	if len(problems) > 0 {
		sortProblems(problems)
		return config.Problems(config.CodeValidationFailed, problems)
	}
	if err := s.requireEnvironment(ctx, ta.EnvironmentID); err != nil {
		return err
	}
	return s.db.Write(ctx, func(tx *configdb.Tx) error {
		return tx.RecordTokenActivity(ctx, ta.EnvironmentID, ta.ApplicationKey, ta.IssuedAt)
	})
}
