package config

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strings"

	"github.com/go-playground/validator/v10"

	"github.com/keenauth/configplans/config/displayname"
)

// keyPattern is the form of a resource key.
var keyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

var (
	hexColorPattern = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
	// A pragmatic BCP 47 check: a 2–3 letter language and optional subtags.
	localePattern = regexp.MustCompile(`^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$`)
)

// specValidator validates the typed specs. Field names in its errors are the
// JSON member names, so a namespace maps directly to a JSON pointer.
var specValidator = newSpecValidator()

func newSpecValidator() *validator.Validate {
	v := validator.New()
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	custom := map[string]func(string) bool{
		"rkey":         keyPattern.MatchString,
		"hexcolor6":    hexColorPattern.MatchString,
		"bcp47":        localePattern.MatchString,
		"https_url":    isHTTPSURL,
		"abs_uri":      isAbsoluteURI,
		"scope_token":  isScopeToken,
		"callback_url": isCallbackURL,
		"visible":      isVisibleText,
		"public_host":  IsPublicHostURL,
	}
	for tag, ok := range custom {
		if err := v.RegisterValidation(tag, func(fl validator.FieldLevel) bool {
			return fl.Field().Kind() == reflect.String && ok(fl.Field().String())
		}); err != nil {
			panic(err)
		}
	}
	return v
}

// parseWebURL parses an absolute http(s) URL with a host and no user info.
func parseWebURL(s string) (*url.URL, bool) {
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, false
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.Hostname() == "" {
		return nil, false
	}
	return u, true
}

func isHTTPSURL(s string) bool {
	u, ok := parseWebURL(s)
	return ok && u.Scheme == "https"
}

// isCallbackURL accepts an https URL, or an http URL whose host is exactly
// localhost (any port), for native and development clients. OAuth forbids a
// fragment in a redirect URI.
func isCallbackURL(s string) bool {
	u, ok := parseWebURL(s)
	if !ok || u.Fragment != "" || strings.Contains(s, "#") {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		return strings.EqualFold(u.Hostname(), "localhost")
	}
	return false
}

// isAbsoluteURI accepts a URI with a scheme: https://api.example/orders or
// urn:example:orders.
func isAbsoluteURI(s string) bool {
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && (u.Host != "" || u.Opaque != "" || u.Path != "")
}

// isVisibleText refuses a display name holding an invisible format
// character (Cf) or a control character (Cc) (§13): "Main" and
// "Main\u200b" read the same. The two joiners are allowed where they join
// (§24, displayname.Check).
func isVisibleText(s string) bool {
	_, bad := displayname.Check(s)
	return !bad
}

// isScopeToken is the scope-token of RFC 6749 §3.3: printable ASCII except
// space, double quote and backslash.
func isScopeToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return s != ""
}

// validationProblems turns the validator's errors into field problems whose
// pointers are prefix followed by the member path.
func validationProblems(err error, prefix string) []FieldError {
	if err == nil {
		return nil
	}
	var ves validator.ValidationErrors
	if !errors.As(err, &ves) {
		// Only a programming error (validating a non-struct) gets here.
		return []FieldError{{Pointer: prefix, Code: CodeInvalid, Detail: "The value could not be validated."}}
	}
	out := make([]FieldError, 0, len(ves))
	for _, fe := range ves {
		out = append(out, FieldError{
			Pointer: prefix + namespacePointer(fe.Namespace()),
			Code:    problemCode(fe),
			Detail:  problemDetail(fe),
		})
	}
	return out
}

// namespacePointer turns a validator namespace such as
// "applicationSpec.api_grants[0].scopes[1]" into "/api_grants/0/scopes/1".
// The first segment is the Go type name of the validated struct.
func namespacePointer(ns string) string {
	segs := strings.Split(ns, ".")
	var tokens []string
	for _, seg := range segs[1:] {
		name, rest, _ := strings.Cut(seg, "[")
		tokens = append(tokens, name)
		for rest != "" {
			var idx string
			idx, rest, _ = strings.Cut(rest, "]")
			tokens = append(tokens, idx)
			rest = strings.TrimPrefix(rest, "[")
		}
	}
	return Pointer(tokens...)
}

func isSized(k reflect.Kind) bool {
	return k == reflect.String || k == reflect.Slice || k == reflect.Array || k == reflect.Map
}

func problemCode(fe validator.FieldError) Code {
	switch fe.Tag() {
	case "required":
		return CodeRequired
	case "min":
		if isSized(fe.Kind()) {
			return CodeTooShort
		}
		return CodeOutOfRange
	case "max":
		if isSized(fe.Kind()) {
			return CodeTooLong
		}
		return CodeOutOfRange
	case "oneof":
		return CodeNotAllowed
	}
	return CodeInvalid
}

func problemDetail(fe validator.FieldError) string {
	f, p := fe.Field(), fe.Param()
	switch fe.Tag() {
	case "required":
		return fmt.Sprintf("%s is required.", f)
	case "min", "max":
		bound := "least"
		if fe.Tag() == "max" {
			bound = "most"
		}
		switch fe.Kind() {
		case reflect.String:
			return fmt.Sprintf("%s must be at %s %s long.", f, bound, plural(p, "character"))
		case reflect.Slice, reflect.Array, reflect.Map:
			return fmt.Sprintf("%s must contain at %s %s.", f, bound, plural(p, "item"))
		}
		return fmt.Sprintf("%s must be at %s %s.", f, bound, p)
	case "oneof":
		return fmt.Sprintf("%s must be one of: %s.", f, strings.ReplaceAll(p, " ", ", "))
	case "rkey":
		return fmt.Sprintf("%s must be a key of 1 to 63 lowercase letters, digits or hyphens, starting with a letter or digit.", f)
	case "hexcolor6":
		return fmt.Sprintf("%s must be a colour of the form #rrggbb.", f)
	case "bcp47":
		return fmt.Sprintf("%s must be a BCP 47 language tag such as en or pt-BR.", f)
	case "https_url":
		return fmt.Sprintf("%s must be an absolute https URL with a host.", f)
	case "abs_uri":
		return fmt.Sprintf("%s must be an absolute URI.", f)
	case "public_host":
		return InternalHostDetail
	case "scope_token":
		return fmt.Sprintf("%s must be printable ASCII without spaces, quotes or backslashes.", f)
	case "callback_url":
		return fmt.Sprintf("%s must be an https URL, or an http URL on localhost, without a fragment.", f)
	case "visible":
		r, _ := displayname.Check(fmt.Sprint(fe.Value()))
		if r.Why != "" {
			return fmt.Sprintf("%s must not hold %U at character %d (%s): a joiner must stand between two letters or "+
				"combining marks (U+200D also between two emoji).", f, r.Rune, r.At, r.Why)
		}
		return fmt.Sprintf("%s must not hold an invisible format or control character (it holds %U at character %d).", f, r.Rune, r.At)
	}
	return fmt.Sprintf("%s is not valid.", f)
}

func plural(n, noun string) string {
	if n == "1" {
		return n + " " + noun
	}
	return n + " " + noun + "s"
}

// duplicates returns the indexes of the items whose value repeats an earlier
// item. key reports false for an item that takes no part (absent values).
func duplicates(n int, key func(i int) (string, bool)) []int {
	seen := make(map[string]bool, n)
	var out []int
	for i := range n {
		k, ok := key(i)
		if !ok {
			continue
		}
		if seen[k] {
			out = append(out, i)
		}
		seen[k] = true
	}
	return out
}

// DuplicateProblems reports every repeated item of a list at
// listPointer/<index>[/member].
func DuplicateProblems(listPointer, member string, n int, key func(i int) (string, bool)) []FieldError {
	var out []FieldError
	for _, i := range duplicates(n, key) {
		ptr := fmt.Sprintf("%s/%d", listPointer, i)
		what := "This item"
		if member != "" {
			ptr += "/" + PointerEscape(member)
			what = "This " + member
		}
		out = append(out, FieldError{Pointer: ptr, Code: CodeDuplicate,
			Detail: what + " repeats an earlier item of the list."})
	}
	return out
}

func StringsKey(list []string) func(int) (string, bool) {
	return func(i int) (string, bool) { return list[i], true }
}
