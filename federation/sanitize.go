package federation

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
)

// The federation service's answers reach our users (a 422 becomes pointers
// and codes of the apply's problem; a transport error's text reaches our
// logs). A faulty service could echo the client secret we sent it, so what
// comes from it is checked here before it goes into an error.

// materialPointer matches the pointers a 422 may name: the material's own
// fields. Any other pointer is reported at the material as a whole.
var materialPointer = regexp.MustCompile(`^(/(issuer|client_id|client_secret|redirect_uri|scopes(/(0|[1-9][0-9]{0,3}))?))?$`)

// errorCode matches a machine-readable code; anything else becomes "invalid".
var errorCode = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

func sanitizeFieldError(fe FieldError, forms []string) FieldError {
	if !materialPointer.MatchString(fe.Pointer) {
		fe.Pointer = ""
	}
	if !errorCode.MatchString(fe.Code) || containsAny(fe.Code, forms) {
		fe.Code = CodeInvalid
	}
	return fe
}

// secretForms lists the secret as sent and in the encodings a service, a
// proxy or a library might quote it in.
func secretForms(secret string) []string {
	if secret == "" {
		return nil
	}
	b := []byte(secret)
	forms := []string{
		secret,
		base64.StdEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b),
		base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b),
		strings.ToUpper(hex.EncodeToString(b)),
		url.QueryEscape(secret),
		url.PathEscape(secret),
	}
	if quoted, err := json.Marshal(secret); err == nil {
		forms = append(forms, strings.Trim(string(quoted), `"`))
	}
	return forms
}

func containsAny(s string, forms []string) bool {
	for _, f := range forms {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}

func redact(s string, forms []string) string {
	for _, f := range forms {
		s = strings.ReplaceAll(s, f, "[redacted]")
	}
	return s
}
