// Package service is the HTTP layer: the Gin router, middleware, handlers
// and the one place that turns errors into problem details.
package service

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
)

// codes maps the contract's stable error codes to HTTP statuses. It is the
// only place where a domain error becomes a status.
var codes = map[config.Code]int{
	config.CodeMalformedRequest:        http.StatusBadRequest,
	config.CodeUnknownField:            http.StatusBadRequest,
	config.CodeInvalidIdempotencyKey:   http.StatusBadRequest,
	config.CodeUnauthenticated:         http.StatusUnauthorized,
	config.CodeInsufficientPermissions: http.StatusForbidden,
	config.CodeNotFound:                http.StatusNotFound,
	config.CodeMethodNotAllowed:        http.StatusMethodNotAllowed,
	config.CodeRequestTimeout:          http.StatusRequestTimeout,
	config.CodeIdempotencyKeyInUse:     http.StatusConflict,
	config.CodeConfigPlanNotApplicable: http.StatusConflict,
	config.CodeApprovalRequired:        http.StatusConflict,
	config.CodeSelfApprovalForbidden:   http.StatusForbidden,
	config.CodeDeletionNotConfirmed:    http.StatusConflict,
	config.CodeConfigConflict:          http.StatusConflict,
	config.CodeConflict:                http.StatusConflict,
	config.CodeConnectionInUse:         http.StatusConflict,
	config.CodeConnectionTestRequired:  http.StatusConflict,
	config.CodeConnectionNotTestable:   http.StatusConflict,
	config.CodeConfigPlanExpired:       http.StatusGone,
	config.CodeRequestTooLarge:         http.StatusRequestEntityTooLarge,
	config.CodeConfigDocumentTooLarge:  http.StatusRequestEntityTooLarge,
	config.CodeRequestHeadersTooLarge:  http.StatusRequestHeaderFieldsTooLarge,
	config.CodeIdempotencyKeyMismatch:  http.StatusUnprocessableEntity,
	config.CodeValidationFailed:        http.StatusUnprocessableEntity,
	config.CodePolicyConflict:          http.StatusUnprocessableEntity,
	config.CodeTooMany:                 http.StatusUnprocessableEntity,
	config.CodeRateLimited:             http.StatusTooManyRequests,
	config.CodeInternalError:           http.StatusInternalServerError,
	config.CodeNotImplemented:          http.StatusNotImplemented,
	config.CodeServiceUnavailable:      http.StatusServiceUnavailable,
}

var titles = map[config.Code]string{
	config.CodeConfigPlanExpired:       "Config plan expired",
	config.CodeConfigPlanNotApplicable: "Config plan not applicable",
	config.CodeApprovalRequired:        "Approval required",
	config.CodeSelfApprovalForbidden:   "Self-approval forbidden",
	config.CodeConfigConflict:          "Configuration changed",
	config.CodeIdempotencyKeyInUse:     "Idempotency key in use",
	config.CodeIdempotencyKeyMismatch:  "Idempotency key reused with another request",
	config.CodeInvalidIdempotencyKey:   "Invalid idempotency key",
}

// problem is an RFC 9457 problem details object.
type problem struct {
	Type      string              `json:"type"`
	Title     string              `json:"title"`
	Status    int                 `json:"status"`
	Code      config.Code         `json:"code"`
	Detail    string              `json:"detail"`
	Errors    []config.FieldError `json:"errors"`
	RequestID string              `json:"request_id"`
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

func title(code config.Code) string {
	if t, ok := titles[code]; ok {
		return t
	}
	s := strings.ReplaceAll(string(code), "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// Statuses returns the contract's codes with the HTTP status of each: a copy
// of the table, for the tests that hold the OpenAPI document to it.
func Statuses() map[config.Code]int { return maps.Clone(codes) }

// response is a finished HTTP answer, kept whole so that an idempotent
// request can store it before it is written. A problem carries its code, so
// that nothing reads it back from the body.
type response struct {
	status int
	header http.Header
	body   []byte
	code   config.Code // "" for a success
	// stream, when set, is the body, written to the client as it is
	// encoded (body is nil): a large plan's answer is not held whole.
	stream jsonStreamer
}

// jsonStreamer is an answer that can write its JSON as it encodes it.
type jsonStreamer interface {
	jsonAppender
	WriteJSON(w io.Writer) error
}

// streamAbove is the size from which a plan's answer is streamed: below
// it, the answer is held and sent with its Content-Length.
const streamAbove = 1 << 20

// planResponse answers a plan: held when it is small, streamed when it is
// large (a plan of 10 MiB of changes is not copied whole once more).
func planResponse(status int, p *plans.Plan) response {
	if p == nil || p.AnswerSizeHint() < streamAbove {
		return jsonResponse(status, p)
	}
	return response{status: status, header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}, stream: p}
}

// revisionDiffResponse answers a revision diff: held when it is small,
// streamed when it is large (a diff holds every spec of the revision twice,
// with their diffs).
func revisionDiffResponse(d *plans.RevisionDiff) response {
	if d == nil || d.AnswerSizeHint() < streamAbove {
		return jsonResponse(http.StatusOK, d)
	}
	return response{status: http.StatusOK, header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}, stream: d}
}

// held makes r's body bytes (for the idempotency store), encoding a
// streamed answer whole.
func (r *response) held() {
	if r.stream != nil {
		r.body, r.stream = r.stream.AppendJSON(nil), nil
	}
}

// jsonAppender is an answer that writes its own JSON, the same values as
// encoding/json would write for it, without encoding/json's generic cost
// (it validates and compacts every raw value again).
type jsonAppender interface{ AppendJSON(b []byte) []byte }

func jsonResponse(status int, v any) response {
	var b []byte
	if a, ok := v.(jsonAppender); ok {
		b = a.AppendJSON(nil)
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return problemResponse(fmt.Errorf("encode response: %w", err), "")
		}
	}
	return response{status: status, header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}, body: b}
}

// toError turns any error into the domain error answered (plans.AsError);
// known is false for an error that is not the contract's, logged in full,
// and for a code missing from the table: both are answered internal_error.
func toError(err error) (*config.Error, bool) {
	de, known := plans.AsError(err)
	if _, ok := codes[de.Code]; !ok {
		return &config.Error{Code: config.CodeInternalError, Detail: "an internal error occurred"}, false
	}
	return de, known
}

// problemResponse renders err as problem+json.
func problemResponse(err error, requestID string) response {
	de, _ := toError(err)
	status := codes[de.Code]
	p := problem{Type: "https://docs.keenauth.dev/errors/" + string(de.Code), Title: title(de.Code), Status: status, Code: de.Code,
		Detail: de.Detail, Errors: de.Errors, RequestID: requestID, extra: de.Extra}
	if p.Errors == nil {
		p.Errors = []config.FieldError{}
	}
	if p.Detail == "" {
		p.Detail = p.Title
	}
	b, _ := json.Marshal(p)
	h := http.Header{"Content-Type": {"application/problem+json"}}
	if ra, ok := de.Extra["retry_after"]; ok {
		h.Set("Retry-After", fmt.Sprint(ra))
	}
	return response{status: status, header: h, body: b, code: de.Code}
}
