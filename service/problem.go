// Package service is the HTTP layer: the Gin router, middleware, handlers
// and the one place that turns errors into problem details.
package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/keenauth/configplans/plans"
)

// codes maps the contract's stable error codes to HTTP statuses. It is the
// only place where a domain error becomes a status.
var codes = map[string]int{
	"malformed_request":          http.StatusBadRequest,
	"unknown_field":              http.StatusBadRequest,
	"invalid_idempotency_key":    http.StatusBadRequest,
	"unauthenticated":            http.StatusUnauthorized,
	"insufficient_permissions":   http.StatusForbidden,
	"not_found":                  http.StatusNotFound,
	"method_not_allowed":         http.StatusMethodNotAllowed,
	"request_timeout":            http.StatusRequestTimeout,
	"idempotency_key_in_use":     http.StatusConflict,
	"config_plan_not_applicable": http.StatusConflict,
	"deletion_not_confirmed":     http.StatusConflict,
	"config_conflict":            http.StatusConflict,
	"conflict":                   http.StatusConflict,
	"connection_in_use":          http.StatusConflict,
	"connection_test_required":   http.StatusConflict,
	"connection_not_testable":    http.StatusConflict,
	"config_plan_expired":        http.StatusGone,
	"request_too_large":          http.StatusRequestEntityTooLarge,
	"config_document_too_large":  http.StatusRequestEntityTooLarge,
	"idempotency_key_mismatch":   http.StatusUnprocessableEntity,
	"validation_failed":          http.StatusUnprocessableEntity,
	"policy_conflict":            http.StatusUnprocessableEntity,
	"rate_limited":               http.StatusTooManyRequests,
	"internal_error":             http.StatusInternalServerError,
	"not_implemented":            http.StatusNotImplemented,
	"service_unavailable":        http.StatusServiceUnavailable,
}

var titles = map[string]string{
	"config_plan_expired":        "Config plan expired",
	"config_plan_not_applicable": "Config plan not applicable",
	"config_conflict":            "Configuration changed since planning",
	"idempotency_key_in_use":     "Idempotency key in use",
	"idempotency_key_mismatch":   "Idempotency key reused with another request",
	"invalid_idempotency_key":    "Invalid idempotency key",
}

// problem is an RFC 9457 problem details object.
type problem struct {
	Type      string             `json:"type"`
	Title     string             `json:"title"`
	Status    int                `json:"status"`
	Code      string             `json:"code"`
	Detail    string             `json:"detail"`
	Errors    []plans.FieldError `json:"errors"`
	RequestID string             `json:"request_id"`
	extra     map[string]any
}

// MarshalJSON puts the extra members beside the standard ones.
func (p problem) MarshalJSON() ([]byte, error) {
	type plain problem
	b, err := json.Marshal(plain(p))
	if err != nil || len(p.extra) == 0 {
		return b, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range p.extra {
		if _, taken := m[k]; !taken {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

func title(code string) string {
	if t, ok := titles[code]; ok {
		return t
	}
	s := strings.ReplaceAll(code, "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// response is a finished HTTP answer, kept whole so that an idempotent
// request can store it before it is written.
type response struct {
	status int
	header http.Header
	body   []byte
}

func jsonResponse(status int, v any) response {
	b, err := json.Marshal(v)
	if err != nil {
		return problemResponse(fmt.Errorf("encode response: %w", err), "")
	}
	return response{status: status, header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}, body: b}
}

// toError turns any error into a domain error; an error that is not one
// becomes internal_error (or service_unavailable for the database).
func toError(err error) (*plans.Error, bool) {
	var de *plans.Error
	switch {
	case errors.As(err, &de):
		if _, ok := codes[de.Code]; ok {
			return de, true
		}
		return &plans.Error{Code: "internal_error", Detail: "an internal error occurred"}, false
	case errors.Is(err, plans.ErrUnavailable):
		return &plans.Error{Code: "service_unavailable", Detail: "the directory is temporarily unavailable", Extra: map[string]any{"retry_after": 1}}, true
	case errors.Is(err, plans.ErrNotFound):
		return &plans.Error{Code: "not_found", Detail: "not found"}, true
	}
	return &plans.Error{Code: "internal_error", Detail: "an internal error occurred"}, false
}

// problemResponse renders err as problem+json.
func problemResponse(err error, requestID string) response {
	de, _ := toError(err)
	status := codes[de.Code]
	p := problem{Type: "https://docs.keenauth.dev/errors/" + de.Code, Title: title(de.Code), Status: status, Code: de.Code,
		Detail: de.Detail, Errors: de.Errors, RequestID: requestID, extra: de.Extra}
	if p.Errors == nil {
		p.Errors = []plans.FieldError{}
	}
	if p.Detail == "" {
		p.Detail = p.Title
	}
	b, _ := json.Marshal(p)
	h := http.Header{"Content-Type": {"application/problem+json"}}
	if ra, ok := de.Extra["retry_after"]; ok {
		h.Set("Retry-After", fmt.Sprint(ra))
	}
	return response{status: status, header: h, body: b}
}
