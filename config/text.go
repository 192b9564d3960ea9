package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckText refuses a request body that is not UTF-8, or that holds a NUL
// character in a JSON string: the JSON decoder would silently replace
// invalid bytes with U+FFFD, and PostgreSQL cannot store U+0000 in text or
// jsonb. Both are 400 malformed_request, before anything runs.
func CheckText(body []byte) error {
	if !utf8.Valid(body) {
		return &Error{Code: CodeMalformedRequest, Detail: "the request body is not valid UTF-8"}
	}
	// The token scan runs only when an escaped NUL may be there.
	if !bytes.Contains(body, []byte(`\u0000`)) {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(body))
	for {
		t, err := d.Token()
		if err != nil {
			return nil // not JSON: the parser of the request says so
		}
		if s, ok := t.(string); ok && strings.IndexByte(s, 0) >= 0 {
			return &Error{Code: CodeMalformedRequest, Detail: `a string of the request body holds a NUL character (\u0000), which cannot be stored`}
		}
	}
}

// QuoteShort quotes a value for a detail, cut to 40 characters.
func QuoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return fmt.Sprintf("%q", s)
}
