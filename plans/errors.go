package plans

import (
	"errors"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// AsError is the domain error answered for err: err itself when it is one,
// the answer of a storage sentinel (service_unavailable, not_found,
// malformed_request for text that cannot be stored), internal_error
// otherwise. known is false for that last case, whose error is not the
// contract's: the service logs it in full.
func AsError(err error) (de *config.Error, known bool) {
	switch {
	case errors.As(err, &de):
		return de, true
	case errors.Is(err, configdb.ErrUnstorableText):
		return &config.Error{Code: config.CodeMalformedRequest, Detail: "the request holds text that cannot be stored (a NUL character)"}, true
	case errors.Is(err, ErrUnavailable):
		return &config.Error{Code: config.CodeServiceUnavailable, Detail: "the directory is temporarily unavailable", Extra: map[string]any{"retry_after": 1}}, true
	case errors.Is(err, ErrNotFound):
		return &config.Error{Code: config.CodeNotFound, Detail: "not found"}, true
	}
	return &config.Error{Code: config.CodeInternalError, Detail: "an internal error occurred"}, false
}

// UnavailableCause names why err made the directory unavailable (one of
// the configdb.Cause… values, for the log line of a 503), or returns ""
// when err is not ErrUnavailable.
func UnavailableCause(err error) string { return configdb.UnavailableCause(err) }

// ErrorCode is the contract's code of the answer to err (see AsError).
func ErrorCode(err error) config.Code {
	de, _ := AsError(err)
	return de.Code
}
