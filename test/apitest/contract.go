package apitest

import (
	"net/http"
	"strings"
	"testing"
)

// checkContract checks what every answer of the API must hold: a
// Request-Id, Cache-Control: no-store on /v1, problem+json for errors,
// never a 500, and an answer that matches the OpenAPI document.
func checkContract(t testing.TB, req *http.Request, r *Response) {
	t.Helper()
	if !strings.HasPrefix(r.Header.Get("Request-Id"), "req_") {
		t.Errorf("%s %s: no Request-Id", req.Method, req.URL.Path)
	}
	if strings.HasPrefix(req.URL.Path, "/v1") && r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s %s: Cache-Control = %q", req.Method, req.URL.Path, r.Header.Get("Cache-Control"))
	}
	if r.Status >= 400 && r.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("%s %s: %d with Content-Type %q", req.Method, req.URL.Path, r.Status, r.Header.Get("Content-Type"))
	}
	if r.Status >= 500 && r.Status != http.StatusNotImplemented && r.Status != http.StatusServiceUnavailable {
		t.Errorf("%s %s: %d %s", req.Method, req.URL.Path, r.Status, r.Body)
	}
	ValidateResponse(t, req, r)
}
