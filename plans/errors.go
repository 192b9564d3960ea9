package plans

import (
	"errors"
	"fmt"
	"strings"

	"github.com/keenauth/configplans/configdb"
)

// FieldError is one problem, located by an RFC 6901 JSON pointer into the
// request body or into the plan.
type FieldError struct {
	Pointer string `json:"pointer"`
	Code    Code   `json:"code"`
	Detail  string `json:"detail"`
}

// Error is a domain error with the stable code of the contract. The service
// maps the code to an HTTP status in one place.
type Error struct {
	Code   Code
	Detail string
	Errors []FieldError
	// Extra holds the members that sit beside code in the problem
	// (plan_status, required_permissions, unconfirmed_deletions, …).
	Extra map[string]any
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return string(e.Code) + ": " + e.Detail
	}
	return string(e.Code)
}

// Errorf builds an *Error with a formatted detail.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Problems builds an *Error listing every field problem.
func Problems(code Code, errs []FieldError) *Error {
	detail := "1 problem"
	if len(errs) != 1 {
		detail = fmt.Sprintf("%d problems", len(errs))
	}
	return &Error{Code: code, Detail: detail, Errors: errs}
}

// AsError is the domain error answered for err: err itself when it is one,
// the answer of a storage sentinel (service_unavailable, not_found,
// malformed_request for text that cannot be stored), internal_error
// otherwise. known is false for that last case, whose error is not the
// contract's: the service logs it in full.
func AsError(err error) (de *Error, known bool) {
	switch {
	case errors.As(err, &de):
		return de, true
	case errors.Is(err, configdb.ErrUnstorableText):
		return &Error{Code: CodeMalformedRequest, Detail: "the request holds text that cannot be stored (a NUL character)"}, true
	case errors.Is(err, ErrUnavailable):
		return &Error{Code: CodeServiceUnavailable, Detail: "the directory is temporarily unavailable", Extra: map[string]any{"retry_after": 1}}, true
	case errors.Is(err, ErrNotFound):
		return &Error{Code: CodeNotFound, Detail: "not found"}, true
	}
	return &Error{Code: CodeInternalError, Detail: "an internal error occurred"}, false
}

// UnavailableCause names why err made the directory unavailable (one of
// the configdb.Cause… values, for the log line of a 503), or returns ""
// when err is not ErrUnavailable.
func UnavailableCause(err error) string { return configdb.UnavailableCause(err) }

// ErrorCode is the contract's code of the answer to err (see AsError).
func ErrorCode(err error) Code {
	de, _ := AsError(err)
	return de.Code
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// PointerEscape escapes one reference token of an RFC 6901 JSON pointer.
func PointerEscape(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return pointerEscaper.Replace(token)
}

// Pointer joins reference tokens into a JSON pointer, escaping each.
func Pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(PointerEscape(t))
	}
	return b.String()
}
