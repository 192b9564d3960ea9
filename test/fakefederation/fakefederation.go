// Package fakefederation is an HTTP fake of the federation service (SPEC §8)
// for tests: it stores OIDC material per environment and connection like
// the real service, records every call, and fails on demand (422, 503, any
// status, or no answer in time).
//
// Unlike the real service, the fake keeps the client secrets it receives,
// and the bodies of the calls, in memory on purpose: tests assert what was
// sent (SecretOf, Calls). It is a test double only.
package fakefederation

import (
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/keenauth/configplans/federation"
)

// Call is one request the fake received, in arrival order.
type Call struct {
	Method string
	// Path is the path as sent, escaped ("/v1/environments/env_1/…").
	Path string
	// Body is the request body as received, client secret included.
	Body []byte
}

// Server is an httptest-based fake of the federation service. Its methods
// are safe for concurrent use.
type Server struct {
	srv       *httptest.Server
	token     string
	done      chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	calls   []Call
	stored  map[ref]entry
	results map[ref]testResult
	faults  []*fault
}

type ref struct{ env, connectionID string }

type entry struct {
	material federation.Material
	secret   string
}

type testResult struct {
	ok     bool
	reason *string
}

// New starts a fake that requires the bearer token (401 otherwise). Close
// it when done.
func New(token string) *Server {
	s := &Server{
		token:   token,
		done:    make(chan struct{}),
		stored:  map[ref]entry{},
		results: map[ref]testResult{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// URL is the fake's base URL, without /v1 (KEENAUTHD_FEDERATION_URL).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the fake; calls still hanging return at once.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
	s.srv.Close()
}

// Calls returns a copy of every call received so far, refused ones
// included.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		out[i] = Call{Method: c.Method, Path: c.Path, Body: slices.Clone(c.Body)}
	}
	return out
}

// SecretOf returns the client secret stored for the connection, "" when no
// material is stored.
func (s *Server) SecretOf(env, connectionID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stored[ref{env, connectionID}].secret
}

// Material returns the material stored for the connection.
func (s *Server) Material(env, connectionID string) (federation.Material, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.stored[ref{env, connectionID}]
	e.material.Scopes = slices.Clone(e.material.Scopes)
	return e.material, ok
}

// TestResult sets the answer of the connection's oidc:test; reason "" is
// sent as null. Without it a test of stored material succeeds.
func (s *Server) TestResult(env, connectionID string, ok bool, reason string) {
	r := testResult{ok: ok}
	if reason != "" {
		r.reason = &reason
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results[ref{env, connectionID}] = r
}

const maxBody = 1 << 20

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.EscapedPath(), Body: body})
	s.mu.Unlock()

	if !s.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
		return
	}
	if f := s.takeFault(r.Method); f != nil {
		if !f.apply(w, r, s.done) {
			return
		}
	}
	s.route(w, r, body)
}

func (s *Server) authorized(r *http.Request) bool {
	got := r.Header.Get("Authorization")
	want := "Bearer " + s.token
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// route answers like the real service.
func (s *Server) route(w http.ResponseWriter, r *http.Request, body []byte) {
	// "", "v1", "environments", env, "connections", con, "oidc" | "oidc:test"
	seg := strings.Split(r.URL.EscapedPath(), "/")
	if len(seg) != 7 || seg[0] != "" || seg[1] != "v1" || seg[2] != "environments" || seg[4] != "connections" {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
		return
	}
	env, err1 := url.PathUnescape(seg[3])
	con, err2 := url.PathUnescape(seg[5])
	if err1 != nil || err2 != nil || env == "" || con == "" {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
		return
	}
	key := ref{env, con}
	switch {
	case seg[6] == "oidc" && r.Method == http.MethodPut:
		s.put(w, key, body)
	case seg[6] == "oidc" && r.Method == http.MethodGet:
		s.get(w, key)
	case seg[6] == "oidc:test" && r.Method == http.MethodPost:
		s.test(w, key)
	case seg[6] == "oidc":
		w.Header().Set("Allow", "GET, PUT")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method_not_allowed"})
	case seg[6] == "oidc:test":
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method_not_allowed"})
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
	}
}

func (s *Server) put(w http.ResponseWriter, key ref, body []byte) {
	var in struct {
		federation.Material
		ClientSecret string `json:"client_secret"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || dec.More() {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "malformed_request"})
		return
	}
	if errs := federation.CheckMaterial(in.Material, in.ClientSecret); len(errs) > 0 {
		writeRejection(w, errs)
		return
	}
	in.Scopes = slices.Clone(in.Scopes)
	s.mu.Lock()
	s.stored[key] = entry{material: in.Material, secret: in.ClientSecret}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) get(w http.ResponseWriter, key ref) {
	s.mu.Lock()
	e, ok := s.stored[key]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
		return
	}
	writeJSON(w, http.StatusOK, federation.Stored{Material: e.material, SecretSet: true})
}

func (s *Server) test(w http.ResponseWriter, key ref) {
	s.mu.Lock()
	_, ok := s.stored[key]
	res, set := s.results[key]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
		return
	}
	if !set {
		res = testResult{ok: true}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": res.ok, "reason": res.reason})
}

func writeRejection(w http.ResponseWriter, errs []federation.FieldError) {
	if errs == nil {
		errs = []federation.FieldError{}
	}
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": errs})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
