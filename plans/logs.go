package plans

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// LogEntry is an entry of the management log.
type LogEntry struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	CreatedAt  Time            `json:"created_at"`
	Actor      EventActor      `json:"actor"`
	RequestID  string          `json:"request_id"`
	PlanID     *string         `json:"plan_id"`
	RevisionID *string         `json:"revision_id"`
	Data       json.RawMessage `json:"data"`
}

var logType = regexp.MustCompile(`^[a-z_]+\.[a-z_]+$`)

// ListLogs lists the management log, newest first, optionally of one type.
func (s *Service) ListLogs(ctx context.Context, a Actor, typ string, lp ListParams) (Page[LogEntry], error) {
	if err := a.Require(PermManagementLogsRead); err != nil {
		return Page[LogEntry]{}, err
	}
	if typ != "" && !logType.MatchString(typ) {
		return Page[LogEntry]{}, &Error{Code: CodeMalformedRequest, Detail: "type is an entry type such as config.applied"}
	}
	q := s.db.WithContext(ctx).Where("environment_id = ?", a.EnvironmentID)
	if typ != "" {
		q = q.Where("type = ?", typ)
	}
	if lp.Cursor != "" {
		q = q.Where("id < ?", lp.Cursor)
	}
	var rows []logRow
	if err := interpretError(q.Order("id DESC").Limit(lp.Limit + 1).Find(&rows).Error); err != nil {
		return Page[LogEntry]{}, err
	}
	out := make([]LogEntry, len(rows))
	for i, r := range rows {
		out[i] = LogEntry{ID: r.ID, Type: r.Type, CreatedAt: Time(r.CreatedAt), Actor: EventActor{r.APIKeyID}, RequestID: r.RequestID,
			PlanID: r.PlanID, RevisionID: r.RevisionID, Data: json.RawMessage(canonical(r.Data))}
	}
	return page(out, lp.Limit, func(e LogEntry) string { return e.ID }), nil
}

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
	if err := decodeObject(raw, &ta); err != nil {
		return TokenActivity{}, err
	}
	return ta, nil
}

// RecordTokenActivity keeps the latest token time per application.
func (s *Service) RecordTokenActivity(ctx context.Context, ta TokenActivity) error {
	var problems []FieldError
	if !ValidID(PrefixEnvironment, ta.EnvironmentID) {
		problems = append(problems, FieldError{Pointer: "/environment_id", Code: CodeInvalid, Detail: "an environment id (env_…)"})
	}
	if !resourceKey.MatchString(ta.ApplicationKey) {
		problems = append(problems, FieldError{Pointer: "/application_key", Code: CodeInvalid, Detail: "an application key"})
	}
	switch {
	case ta.IssuedAt.IsZero():
		problems = append(problems, FieldError{Pointer: "/issued_at", Code: CodeRequired, Detail: "an RFC 3339 time"})
	case ta.IssuedAt.After(s.now().Add(maxClockSkew)):
		// A time in the future would protect the application's deletion
		// for as long as it lies ahead.
		problems = append(problems, FieldError{Pointer: "/issued_at", Code: CodeInFuture,
			Detail: "issued_at is in the future, past the clock skew allowed"})
	}
	if len(problems) > 0 {
		sortProblems(problems)
		return Problems(CodeValidationFailed, problems)
	}
	if err := s.requireEnvironment(ctx, ta.EnvironmentID); err != nil {
		return err
	}
	row := tokenActivityRow{EnvironmentID: ta.EnvironmentID, ApplicationKey: ta.ApplicationKey, LastIssuedAt: ta.IssuedAt.UTC()}
	greatest := "GREATEST"
	if isSQLite(s.db) {
		greatest = "MAX" // SQLite's MAX of two values; its UTC time text sorts as time
	}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "environment_id"}, {Name: "application_key"}},
		DoUpdates: clause.Set{{Column: clause.Column{Name: "last_issued_at"}, Value: gorm.Expr(greatest + "(token_activity.last_issued_at, excluded.last_issued_at)")}},
	}).Create(&row).Error
	return interpretError(err)
}

func (s *Service) requireEnvironment(ctx context.Context, envID string) error {
	var n int64
	if err := s.db.WithContext(ctx).Model(&Environment{}).Where("id = ?", envID).Count(&n).Error; err != nil {
		return interpretError(err)
	}
	if n == 0 {
		return &Error{Code: CodeNotFound, Detail: "no such environment"}
	}
	return nil
}

// PutPolicies replaces the policies of an environment.
func (s *Service) PutPolicies(ctx context.Context, envID string, body []byte) (Policies, error) {
	if !ValidID(PrefixEnvironment, envID) {
		return Policies{}, &Error{Code: CodeNotFound, Detail: "no such environment"}
	}
	p, problems, err := DecodePolicies(body)
	if err != nil {
		return Policies{}, err
	}
	if len(problems) > 0 {
		return Policies{}, Problems(CodeValidationFailed, problems)
	}
	if err := s.requireEnvironment(ctx, envID); err != nil {
		return Policies{}, err
	}
	row := policyRow{EnvironmentID: envID, Policies: mustJSON(p), UpdatedAt: s.now()}
	err = s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "environment_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"policies", "updated_at"}),
	}).Create(&row).Error
	if err != nil {
		return Policies{}, fmt.Errorf("policies: %w", interpretError(err))
	}
	return p, nil
}
