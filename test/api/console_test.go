package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/keenauth/configplans/test/apitest"
)

// consoleCSP is the policy of SPEC §15, word for word.
const consoleCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// TestConsoleResponsesCarryTheSecurityHeaders checks the exact headers of
// §15 on every kind of /console/ answer: the page, a deep link, each asset,
// the redirect, a missing asset, a wrong method.
func TestConsoleResponsesCarryTheSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for _, tc := range []struct {
		method, path string
		status       int
		contentType  string
	}{
		{"GET", "/console/", 200, "text/html; charset=utf-8"},
		{"GET", "/console/plans", 200, "text/html; charset=utf-8"},
		{"GET", "/console/plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5", 200, "text/html; charset=utf-8"},
		{"GET", "/console/revisions/cfgr_01m4qpqtywfs7930tb6kqn5rc5?x=1", 200, "text/html; charset=utf-8"},
		{"GET", "/console/assets/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/console/assets/plans.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/console/assets/style.css", 200, "text/css; charset=utf-8"},
		{"GET", "/console", 301, ""},
		{"GET", "/console/assets/nope.js", 404, "application/problem+json"},
		{"GET", "/console/assets/", 404, "application/problem+json"},
		{"GET", "/console/assets/index.html", 404, "application/problem+json"},
		{"GET", "/console/assets/../api.js", 404, "application/problem+json"},
		{"POST", "/console/", 405, "application/problem+json"},
	} {
		r := e.Do(apitest.Request{Method: tc.method, Path: tc.path, Secret: "-"})
		if r.Status != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, r.Status, tc.status)
		}
		if got := r.Header.Get("Content-Type"); tc.contentType != "" && got != tc.contentType {
			t.Errorf("%s %s: Content-Type %q, want %q", tc.method, tc.path, got, tc.contentType)
		}
		for name, want := range map[string]string{"Content-Security-Policy": consoleCSP,
			"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
			if got := r.Header.Values(name); len(got) != 1 || got[0] != want {
				t.Errorf("%s %s: %s = %q, want exactly %q", tc.method, tc.path, name, got, want)
			}
		}
	}
	if r := e.Do(apitest.Request{Method: "GET", Path: "/console", Secret: "-"}); r.Header.Get("Location") != "/console/" {
		t.Errorf("GET /console: Location %q, want /console/", r.Header.Get("Location"))
	}
	// The server's address leads a browser to the console (§22).
	if r := e.Do(apitest.Request{Method: "GET", Path: "/", Secret: "-"}); r.Status != http.StatusFound || r.Header.Get("Location") != "/console/" {
		t.Errorf("GET /: %d Location %q, want 302 to /console/", r.Status, r.Header.Get("Location"))
	}
	if r := e.Do(apitest.Request{Method: "POST", Path: "/", Secret: "-"}); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", r.Status)
	}
	// The API's answers are not the console's: no console policy on /v1.
	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/api-keys/current"}); r.Header.Get("Content-Security-Policy") != "" {
		t.Errorf("/v1 answers carry the console's policy")
	}
}

// TestConsoleIndexHasNoInlineScriptOrStyle: the page loads only its own
// files, so the policy's script-src and style-src 'self' hold; and the
// scripts never turn a string into HTML.
func TestConsoleIndexHasNoInlineScriptOrStyle(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	index := string(e.Do(apitest.Request{Method: "GET", Path: "/console/", Secret: "-"}).Body)
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(index, -1) {
		if !strings.Contains(tag, `src="/console/assets/`) {
			t.Errorf("index.html has an inline script: %s", tag)
		}
	}
	if regexp.MustCompile(`<script[^>]*>[^<]+</script>`).MatchString(index) {
		t.Error("index.html has a script with a body")
	}
	if strings.Contains(index, "<style") || strings.Contains(index, "style=") || regexp.MustCompile(` on[a-z]+=`).MatchString(index) {
		t.Error("index.html has an inline style or event handler")
	}
	for _, name := range []string{"app.js", "api.js", "dom.js", "diff.js", "plans.js", "revisions.js", "logs.js", "config.js", "review.js"} {
		r := e.Do(apitest.Request{Method: "GET", Path: "/console/assets/" + name, Secret: "-"})
		if r.Status != http.StatusOK {
			t.Errorf("%s: %d", name, r.Status)
			continue
		}
		for _, banned := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "localStorage", "document.cookie", ".style."} {
			if strings.Contains(string(r.Body), banned) {
				t.Errorf("%s uses %s", name, banned)
			}
		}
	}
}
