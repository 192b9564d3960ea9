// Package idempotency implements the Idempotency-Key contract of the API
// (SPEC §9): parsing the header, fingerprinting a request, and the records
// that let a retried POST be answered from the first request's response.
//
// The HTTP layer uses it in this order: ParseKey, Fingerprint, Store.Claim;
// while the operation runs, Hold renews the claim; at the end the response is
// stored with CompleteWithoutCancel when Storable says so, and the claim is
// released with ReleaseWithoutCancel otherwise.
package idempotency

import (
	"errors"
	"strings"
)

// ErrInvalidKey is returned by ParseKey for a header the contract refuses
// (400 invalid_idempotency_key).
var ErrInvalidKey = errors.New("invalid idempotency key")

// MaxKeyLength is the longest key accepted, counted after unquoting.
const MaxKeyLength = 255

// ParseKey validates the values of the Idempotency-Key header, as
// http.Header gives them (all lines of the header, in order).
//
// No value means no key: ("", nil). Otherwise exactly one line is accepted,
// holding either a bare token or a quoted string (an RFC 8941 sf-string:
// "…" where \" and \\ are the only escapes). The two forms of one key are
// the same key, so the unquoted value is returned. The key is 1–255 visible
// ASCII characters (0x21–0x7E); inside a quoted string a space is allowed
// too. A bare token may not contain a comma or a double quote: a comma would
// make the line a list, and a stray quote leaves it ambiguous.
//
// Leading and trailing spaces and tabs are not part of a field value
// (RFC 9110 §5.5) and are ignored. Several lines, an empty key, a key that is
// too long, control characters, non-ASCII bytes, a list, or anything after
// the closing quote are ErrInvalidKey.
func ParseKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", ErrInvalidKey
	}
	v := strings.Trim(values[0], " \t")
	var key string
	if strings.HasPrefix(v, `"`) {
		k, ok := unquote(v)
		if !ok {
			return "", ErrInvalidKey
		}
		key = k
	} else {
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c < 0x21 || c > 0x7e || c == ',' || c == '"' {
				return "", ErrInvalidKey
			}
		}
		key = v
	}
	if len(key) == 0 || len(key) > MaxKeyLength {
		return "", ErrInvalidKey
	}
	return key, nil
}

// unquote decodes an sf-string that must fill s entirely.
func unquote(s string) (string, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i >= len(s) || (s[i] != '"' && s[i] != '\\') {
				return "", false
			}
			b.WriteByte(s[i])
		case c == '"':
			// The closing quote must end the value: no list, no parameters.
			return b.String(), i == len(s)-1
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
		if b.Len() > MaxKeyLength {
			return "", false
		}
	}
	return "", false // no closing quote
}
