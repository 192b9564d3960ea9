package federation

import (
	"net/url"
	"slices"
)

// Codes of the field errors CheckMaterial reports.
const (
	CodeRequired       = "required"
	CodeInvalid        = "invalid"
	CodeOpenIDRequired = "openid_required"
)

// CheckMaterial reports every way the material and its client secret are not
// well formed, as the federation service would in a 422: the issuer and the
// redirect URI are absolute https URLs, the client id and the secret are not
// empty, and the scopes include "openid". The dev-mode stand-in and the test
// fake use it; the real service may check more (that the issuer answers, for
// example). The secret is only tested for emptiness.
func CheckMaterial(m Material, clientSecret string) []FieldError {
	var errs []FieldError
	add := func(pointer, code string) {
		errs = append(errs, FieldError{Pointer: pointer, Code: code})
	}
	if code := checkHTTPSURL(m.Issuer); code != "" {
		add("/issuer", code)
	}
	if m.ClientID == "" {
		add("/client_id", CodeRequired)
	}
	if clientSecret == "" {
		add("/client_secret", CodeRequired)
	}
	if !slices.Contains(m.Scopes, "openid") {
		add("/scopes", CodeOpenIDRequired)
	}
	if code := checkHTTPSURL(m.RedirectURI); code != "" {
		add("/redirect_uri", code)
	}
	return errs
}

// checkHTTPSURL returns the code of the problem with s, "" when s is an
// absolute https URL with a host and no user information.
func checkHTTPSURL(s string) string {
	if s == "" {
		return CodeRequired
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil {
		return CodeInvalid
	}
	return ""
}
