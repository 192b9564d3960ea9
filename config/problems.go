package config

import (
	"fmt"
	"strings"
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
