package federation

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The federation service's answers reach our users (a 422 becomes pointers
// and codes of the apply's problem, then a federation_failed event and the
// stored idempotency record; a transport error's text reaches our logs). A
// faulty service could echo the client secret we sent it, whole or in part,
// so what comes from it is checked here before it goes into an error.
//
// A text is taken to hold the secret when it contains any chunkLen bytes in
// a row of the secret, or of one of its encodings (secretForms); a form
// shorter than chunkLen counts only whole. Eight bytes is a third of a short
// secret and 64 bits of a random one: less would flag ordinary words of
// prose, more would let a third of a 24-byte secret through.
const chunkLen = 8

// materialPointer matches the pointers a 422 may name: the material's own
// fields. Any other pointer is reported at the material as a whole.
var materialPointer = regexp.MustCompile(`^(/(issuer|client_id|client_secret|redirect_uri|scopes(/(0|[1-9][0-9]{0,3}))?))?$`)

// errorCode matches a machine-readable code; anything else becomes "invalid".
var errorCode = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// sanitizeFieldError returns what of fe may be shown:
//
//   - a code that is not a machine-readable code, or that holds any part of
//     the secret (see chunkLen), becomes CodeInvalid;
//   - a pointer outside the material's fields becomes "" (the material as a
//     whole);
//   - a pointer that holds any part of the secret (possible only when the
//     secret itself quotes a field name or an index, "…/scopes/12…") is cut,
//     a segment at a time, to the field it names ("/scopes/12" → "/scopes"),
//     and down to "" if the field's name itself is part of the secret.
//
// The replacements are this package's own words, so they carry nothing of
// the secret even when a short secret happens to occur in them.
func sanitizeFieldError(fe FieldError, m *secretMatcher) FieldError {
	if !materialPointer.MatchString(fe.Pointer) {
		fe.Pointer = ""
	}
	for fe.Pointer != "" && m.holds(fe.Pointer) {
		fe.Pointer = fe.Pointer[:strings.LastIndexByte(fe.Pointer, '/')]
	}
	if !errorCode.MatchString(fe.Code) || m.holds(fe.Code) {
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

// secretMatcher finds the parts of a secret's forms in a text. It is built
// only when an answer must be checked: the index of every chunk of a long
// secret's forms is too much to build for each write that succeeds.
type secretMatcher struct {
	chunks map[string]struct{} // every chunkLen-byte substring of the longer forms
	short  []string            // the forms shorter than chunkLen, matched whole
}

func newSecretMatcher(forms []string) *secretMatcher {
	m := &secretMatcher{chunks: map[string]struct{}{}}
	for _, f := range forms {
		if len(f) < chunkLen {
			if f != "" {
				m.short = append(m.short, f)
			}
			continue
		}
		for i := 0; i+chunkLen <= len(f); i++ {
			m.chunks[f[i:i+chunkLen]] = struct{}{}
		}
	}
	return m
}

// holds reports whether s contains any part of the secret.
func (m *secretMatcher) holds(s string) bool {
	return len(m.spans(s)) > 0
}

// spans returns the byte ranges [from, to) of s that are part of the
// secret, in order, overlapping and touching ranges merged, each widened to
// whole UTF-8 characters.
func (m *secretMatcher) spans(s string) [][2]int {
	covered := make([]bool, len(s)) // covered[i]: byte i is part of the secret
	mark := func(from, to int) {
		for from > 0 && !utf8.RuneStart(s[from]) {
			from--
		}
		for to < len(s) && !utf8.RuneStart(s[to]) {
			to++
		}
		for k := from; k < to; k++ {
			covered[k] = true
		}
	}
	for _, f := range m.short {
		for i := 0; ; i++ {
			j := strings.Index(s[i:], f)
			if j < 0 {
				break
			}
			i += j
			mark(i, i+len(f))
		}
	}
	if len(m.chunks) > 0 {
		for i := 0; i+chunkLen <= len(s); i++ {
			if _, ok := m.chunks[s[i:i+chunkLen]]; ok {
				mark(i, i+chunkLen)
			}
		}
	}
	var out [][2]int
	for i := 0; i < len(s); i++ {
		if !covered[i] {
			continue
		}
		from := i
		for i < len(s) && covered[i] {
			i++
		}
		out = append(out, [2]int{from, i})
	}
	return out
}

// redact replaces each run of s that is part of the secret with
// "[redacted]".
func redact(s string, forms []string) string {
	if len(forms) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, sp := range newSecretMatcher(forms).spans(s) {
		b.WriteString(s[last:sp[0]])
		b.WriteString("[redacted]")
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}
