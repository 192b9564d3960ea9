package federation_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/test/fakefederation"
)

const (
	token  = "fed-token-7Hq2"
	env    = "env_01m4qpqtywfs7930tb6kqn5rc5"
	con    = "con_01m4qpqtywfs7930tb6kqn5rc6"
	secret = "client-secret-1"
)

var material = federation.Material{
	Issuer:      "https://idp.acme.example",
	ClientID:    "abc",
	Scopes:      []string{"openid", "email"},
	RedirectURI: "https://login.shop.example/sso/" + con + "/callback",
}

// setup starts a fake and a client of it with short timings; cfg's zero
// fields get test defaults.
func setup(t *testing.T, cfg federation.HTTPConfig) (*fakefederation.Server, *federation.HTTPClient) {
	t.Helper()
	srv := fakefederation.New(token)
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL()
	if cfg.Token == "" {
		cfg.Token = token
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = time.Millisecond
	}
	return srv, federation.NewHTTPClient(cfg)
}

func countCalls(srv *fakefederation.Server, method string) int {
	n := 0
	for _, c := range srv.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

func TestPutOIDC204(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{})

	if err := c.PutOIDC(context.Background(), env, con, material, secret); err != nil {
		t.Fatalf("PutOIDC: %v", err)
	}
	if got := srv.SecretOf(env, con); got != secret {
		t.Errorf("stored secret = %q, want %q", got, secret)
	}
	got, ok := srv.Material(env, con)
	if !ok {
		t.Fatal("no material stored")
	}
	if diff := cmp.Diff(material, got); diff != "" {
		t.Errorf("stored material (-want +got):\n%s", diff)
	}
	calls := srv.Calls()
	if len(calls) != 1 {
		t.Fatalf("calls = %d, want 1", len(calls))
	}
	wantPath := "/v1/environments/" + env + "/connections/" + con + "/oidc"
	if calls[0].Method != http.MethodPut || calls[0].Path != wantPath {
		t.Errorf("call = %s %s, want PUT %s", calls[0].Method, calls[0].Path, wantPath)
	}
	var body map[string]any
	if err := json.Unmarshal(calls[0].Body, &body); err != nil {
		t.Fatalf("body: %v", err)
	}
	wantBody := map[string]any{
		"issuer": material.Issuer, "client_id": material.ClientID, "client_secret": secret,
		"scopes": []any{"openid", "email"}, "redirect_uri": material.RedirectURI,
	}
	if diff := cmp.Diff(wantBody, body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestPathSegmentsEscaped(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{})
	oddEnv, oddCon := "env/../x", "con 1?#"

	if err := c.PutOIDC(context.Background(), oddEnv, oddCon, material, secret); err != nil {
		t.Fatalf("PutOIDC: %v", err)
	}
	if _, err := c.GetOIDC(context.Background(), oddEnv, oddCon); err != nil {
		t.Fatalf("GetOIDC: %v", err)
	}
	if _, _, err := c.TestOIDC(context.Background(), oddEnv, oddCon); err != nil {
		t.Fatalf("TestOIDC: %v", err)
	}
	want := []string{
		"/v1/environments/env%2F..%2Fx/connections/con%201%3F%23/oidc",
		"/v1/environments/env%2F..%2Fx/connections/con%201%3F%23/oidc",
		"/v1/environments/env%2F..%2Fx/connections/con%201%3F%23/oidc:test",
	}
	var got []string
	for _, call := range srv.Calls() {
		got = append(got, call.Path)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if srv.SecretOf(oddEnv, oddCon) != secret {
		t.Error("the fake did not store the material under the unescaped ids")
	}
}

func TestEmptyIDsRefusedBeforeAnyCall(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{})
	ctx := context.Background()
	for _, ids := range [][2]string{{"", con}, {env, ""}, {"..", con}, {env, "."}} {
		if err := c.PutOIDC(ctx, ids[0], ids[1], material, secret); err == nil {
			t.Errorf("PutOIDC(%q, %q) succeeded", ids[0], ids[1])
		}
		if _, err := c.GetOIDC(ctx, ids[0], ids[1]); err == nil {
			t.Errorf("GetOIDC(%q, %q) succeeded", ids[0], ids[1])
		}
		if _, _, err := c.TestOIDC(ctx, ids[0], ids[1]); err == nil {
			t.Errorf("TestOIDC(%q, %q) succeeded", ids[0], ids[1])
		}
	}
	if n := len(srv.Calls()); n != 0 {
		t.Errorf("calls = %d, want 0", n)
	}
}

func TestPutOIDC422Rejected(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{})
	want := []federation.FieldError{{Pointer: "/issuer", Code: "issuer_unreachable"}, {Pointer: "/scopes/1", Code: "unsupported"}}
	srv.Reject(want...)

	err := c.PutOIDC(context.Background(), env, con, material, secret)
	var rej *federation.RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("err = %v, want a *RejectedError", err)
	}
	if diff := cmp.Diff(want, rej.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if errors.Is(err, federation.ErrUnavailable) {
		t.Error("a rejection is not ErrUnavailable")
	}
	if n := countCalls(srv, http.MethodPut); n != 1 {
		t.Errorf("PUT calls = %d, want 1 (a rejection is never retried)", n)
	}
	if want := "federation service rejected the OIDC material: /issuer issuer_unreachable, /scopes/1 unsupported"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestPutOIDC422FromTheServiceValidation(t *testing.T) {
	t.Parallel()
	_, c := setup(t, federation.HTTPConfig{})
	bad := material
	bad.Scopes = []string{"email"}
	bad.Issuer = "http://idp.acme.example"

	err := c.PutOIDC(context.Background(), env, con, bad, secret)
	var rej *federation.RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("err = %v, want a *RejectedError", err)
	}
	want := []federation.FieldError{{Pointer: "/issuer", Code: "invalid"}, {Pointer: "/scopes", Code: "openid_required"}}
	if diff := cmp.Diff(want, rej.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestPutOIDC422Sanitized(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want []federation.FieldError
	}{
		{"unparseable body", `<html>`, []federation.FieldError{{Pointer: "", Code: "invalid"}}},
		{"no errors", `{"errors": []}`, []federation.FieldError{{Pointer: "", Code: "invalid"}}},
		{"pointer outside the material", `{"errors": [{"pointer": "/tenant/x", "code": "bad"}]}`,
			[]federation.FieldError{{Pointer: "", Code: "bad"}}},
		{"code that is prose", `{"errors": [{"pointer": "/client_id", "code": "client id is unknown"}]}`,
			[]federation.FieldError{{Pointer: "/client_id", Code: "invalid"}}},
		{"code that quotes the secret", `{"errors": [{"pointer": "/client_secret", "code": "` + secret + `"}]}`,
			[]federation.FieldError{{Pointer: "/client_secret", Code: "invalid"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, c := setup(t, federation.HTTPConfig{})
			srv.FailWith(http.StatusUnprocessableEntity, tt.body)
			err := c.PutOIDC(context.Background(), env, con, material, secret)
			var rej *federation.RejectedError
			if !errors.As(err, &rej) {
				t.Fatalf("err = %v, want a *RejectedError", err)
			}
			if diff := cmp.Diff(tt.want, rej.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPutOIDC503RetriedThenUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		retries int
		calls   int
	}{
		{"default retries", 0, 3},
		{"no retries", -1, 1},
		{"four retries", 4, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, c := setup(t, federation.HTTPConfig{Retries: tt.retries})
			srv.Unavailable()
			err := c.PutOIDC(context.Background(), env, con, material, secret)
			if !errors.Is(err, federation.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if n := countCalls(srv, http.MethodPut); n != tt.calls {
				t.Errorf("PUT calls = %d, want %d", n, tt.calls)
			}
			if !strings.Contains(err.Error(), "status 503") {
				t.Errorf("Error() = %q, want the status", err)
			}
		})
	}
}

func TestPutOIDC503OnceThenSucceeds(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{})
	srv.Next(1).Unavailable()

	if err := c.PutOIDC(context.Background(), env, con, material, secret); err != nil {
		t.Fatalf("PutOIDC: %v", err)
	}
	if n := countCalls(srv, http.MethodPut); n != 2 {
		t.Errorf("PUT calls = %d, want 2", n)
	}
	if srv.SecretOf(env, con) != secret {
		t.Error("material not stored after the retry")
	}
}

func TestPutOIDCRetriesOtherUnavailability(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusRequestTimeout, http.StatusTooManyRequests} {
		srv, c := setup(t, federation.HTTPConfig{})
		srv.Next(2).FailWith(status, `{}`)
		if err := c.PutOIDC(context.Background(), env, con, material, secret); err != nil {
			t.Errorf("status %d twice then 204: %v", status, err)
		}
		if n := countCalls(srv, http.MethodPut); n != 3 {
			t.Errorf("status %d: PUT calls = %d, want 3", status, n)
		}
	}
}

func TestPutOIDCBackoffDoubles(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{Backoff: 100 * time.Millisecond})
	srv.Unavailable()
	start := time.Now()
	_ = c.PutOIDC(context.Background(), env, con, material, secret)
	// Two retries: 100ms, then 200ms.
	if elapsed := time.Since(start); elapsed < 300*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("three attempts took %s, want about 300ms of backoff", elapsed)
	}
}

func TestPutOIDCHangBeyondTimeout(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{Timeout: 50 * time.Millisecond})
	srv.Hang(time.Minute)

	start := time.Now()
	err := c.PutOIDC(context.Background(), env, con, material, secret)
	if !errors.Is(err, federation.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("took %s, want three attempts of 50ms", elapsed)
	}
	if !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Errorf("Error() = %q, want the timeout", err)
	}
	if n := countCalls(srv, http.MethodPut); n != 3 {
		t.Errorf("PUT calls = %d, want 3", n)
	}
}

func TestPutOIDCEachAttemptHasItsOwnTimeout(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{Timeout: 100 * time.Millisecond, Retries: 1})
	srv.Next(1).Hang(time.Minute)

	if err := c.PutOIDC(context.Background(), env, con, material, secret); err != nil {
		t.Fatalf("PutOIDC: %v", err)
	}
	if srv.SecretOf(env, con) != secret {
		t.Error("the second attempt did not store the material")
	}
}

func TestPutOIDCCancelledDuringBackoff(t *testing.T) {
	t.Parallel()
	// The cancellation comes when the client has read the first 503, so
	// it falls after the first attempt whatever the machine's load.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc := &http.Client{Transport: cancelOnClose{http.DefaultTransport, cancel}}
	srv, c := setup(t, federation.HTTPConfig{Backoff: time.Minute, HTTPClient: hc})
	srv.Unavailable()

	start := time.Now()
	err := c.PutOIDC(ctx, env, con, material, secret)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %s after the cancellation", elapsed)
	}
	if !errors.Is(err, federation.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want ErrUnavailable and context.Canceled", err)
	}
	if n := countCalls(srv, http.MethodPut); n != 1 {
		t.Errorf("PUT calls = %d, want 1", n)
	}
}

// cancelOnClose cancels a context when the body of an answer is closed.
type cancelOnClose struct {
	rt     http.RoundTripper
	cancel context.CancelFunc
}

func (c cancelOnClose) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil {
		resp.Body = closeHook{resp.Body, c.cancel}
	}
	return resp, err
}

type closeHook struct {
	io.ReadCloser
	onClose func()
}

func (h closeHook) Close() error {
	err := h.ReadCloser.Close()
	h.onClose()
	return err
}

func TestPutOIDCDeadlineBeforeNextAttempt(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{Backoff: time.Minute})
	srv.Unavailable()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	start := time.Now()
	err := c.PutOIDC(ctx, env, con, material, secret)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %s: it waited for a retry that could not happen in time", elapsed)
	}
	if !errors.Is(err, federation.ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}

func TestPutOIDCCallerCancelledIsNotUnavailable(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{})
	srv.Hang(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // cancel while the PUT hangs at the federation service
		for deadline := time.Now().Add(10 * time.Second); countCalls(srv, http.MethodPut) == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()

	err := c.PutOIDC(ctx, env, con, material, secret)
	if !errors.Is(err, context.Canceled) || errors.Is(err, federation.ErrUnavailable) {
		t.Errorf("err = %v, want context.Canceled only", err)
	}
	if n := countCalls(srv, http.MethodPut); n != 1 {
		t.Errorf("PUT calls = %d, want 1", n)
	}
}

func TestPutOIDCConnectionRefused(t *testing.T) {
	t.Parallel()
	srv := fakefederation.New(token)
	base := srv.URL()
	srv.Close()
	c := federation.NewHTTPClient(federation.HTTPConfig{BaseURL: base, Token: token, Backoff: time.Millisecond})

	err := c.PutOIDC(context.Background(), env, con, material, secret)
	if !errors.Is(err, federation.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "after 3 attempts") {
		t.Errorf("Error() = %q, want the attempts counted", err)
	}
}

func TestPutOIDC404NotFound(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{})
	srv.On(http.MethodPut).FailWith(http.StatusNotFound, `{"error":"not_found"}`)

	err := c.PutOIDC(context.Background(), env, con, material, secret)
	if !errors.Is(err, federation.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if n := countCalls(srv, http.MethodPut); n != 1 {
		t.Errorf("PUT calls = %d, want 1", n)
	}
}

func TestPutOIDCUnexpectedStatusNotRetried(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{})
	srv.FailWith(http.StatusBadRequest, `{"error":"malformed_request"}`)

	err := c.PutOIDC(context.Background(), env, con, material, secret)
	if err == nil || errors.Is(err, federation.ErrUnavailable) {
		t.Fatalf("err = %v, want a plain error", err)
	}
	if want := "unexpected status 400"; !strings.Contains(err.Error(), want) {
		t.Errorf("Error() = %q, want %q", err, want)
	}
	if n := countCalls(srv, http.MethodPut); n != 1 {
		t.Errorf("PUT calls = %d, want 1", n)
	}
}

func TestBadTokenIsClearAndNotRetried(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{Token: "wrong-token"})
	ctx := context.Background()

	errPut := c.PutOIDC(ctx, env, con, material, secret)
	_, errGet := c.GetOIDC(ctx, env, con)
	_, _, errTest := c.TestOIDC(ctx, env, con)
	for name, err := range map[string]error{"PutOIDC": errPut, "GetOIDC": errGet, "TestOIDC": errTest} {
		if !errors.Is(err, federation.ErrUnauthorized) || errors.Is(err, federation.ErrUnavailable) {
			t.Errorf("%s: err = %v, want ErrUnauthorized only", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "refused the token") || !strings.Contains(err.Error(), "status 401") {
			t.Errorf("%s: Error() = %q, not clear", name, err)
		}
	}
	if n := len(srv.Calls()); n != 3 {
		t.Errorf("calls = %d, want 3 (one each)", n)
	}
}

func TestNoTokenSendsNoAuthorization(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got []string
	)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Values("Authorization")
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hs.Close()
	c := federation.NewHTTPClient(federation.HTTPConfig{BaseURL: hs.URL})
	if err := c.PutOIDC(context.Background(), env, con, material, secret); err != nil {
		t.Fatalf("PutOIDC: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 {
		t.Errorf("Authorization = %q, want none", got)
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var (
		mu        sync.Mutex
		elsewhere []string
	)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	// Even a caller's client that follows redirects does not.
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
	c := federation.NewHTTPClient(federation.HTTPConfig{BaseURL: redirecting.URL, Token: token, HTTPClient: hc})

	err := c.PutOIDC(context.Background(), env, con, material, secret)
	if err == nil || !strings.Contains(err.Error(), "unexpected status 307") {
		t.Errorf("err = %v, want unexpected status 307", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) != 0 {
		t.Errorf("the redirect was followed: %v", elsewhere)
	}
}

func TestGetOIDC(t *testing.T) {
	t.Parallel()
	_, c := setup(t, federation.HTTPConfig{})
	ctx := context.Background()

	if _, err := c.GetOIDC(ctx, env, con); !errors.Is(err, federation.ErrNotFound) {
		t.Errorf("before any PUT: err = %v, want ErrNotFound", err)
	}
	if err := c.PutOIDC(ctx, env, con, material, secret); err != nil {
		t.Fatalf("PutOIDC: %v", err)
	}
	got, err := c.GetOIDC(ctx, env, con)
	if err != nil {
		t.Fatalf("GetOIDC: %v", err)
	}
	if diff := cmp.Diff(federation.Stored{Material: material, SecretSet: true}, got); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	if _, err := c.GetOIDC(ctx, env, "con_other"); !errors.Is(err, federation.ErrNotFound) {
		t.Errorf("another connection: err = %v, want ErrNotFound", err)
	}
}

func TestGetOIDCUnavailableNotRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault func(*fakefederation.Server)
	}{
		{"503", func(s *fakefederation.Server) { s.Unavailable() }},
		{"unparseable 200", func(s *fakefederation.Server) { s.FailWith(http.StatusOK, `{"issuer": 3`) }},
		{"204 without a body", func(s *fakefederation.Server) { s.FailWith(http.StatusNoContent, ``) }},
		{"hang", func(s *fakefederation.Server) { s.Hang(time.Minute) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, c := setup(t, federation.HTTPConfig{Timeout: 50 * time.Millisecond})
			tt.fault(srv)
			_, err := c.GetOIDC(context.Background(), env, con)
			if !errors.Is(err, federation.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if n := len(srv.Calls()); n != 1 {
				t.Errorf("calls = %d, want 1", n)
			}
		})
	}
}

func TestTestOIDC(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{})
	ctx := context.Background()

	if _, _, err := c.TestOIDC(ctx, env, con); !errors.Is(err, federation.ErrNotFound) {
		t.Errorf("without material: err = %v, want ErrNotFound", err)
	}
	if err := c.PutOIDC(ctx, env, con, material, secret); err != nil {
		t.Fatalf("PutOIDC: %v", err)
	}
	ok, reason, err := c.TestOIDC(ctx, env, con)
	if err != nil || !ok || reason != nil {
		t.Errorf("TestOIDC = %v, %v, %v; want true, nil, nil", ok, reason, err)
	}
	srv.TestResult(env, con, false, "issuer_unreachable")
	ok, reason, err = c.TestOIDC(ctx, env, con)
	if err != nil || ok || reason == nil || *reason != "issuer_unreachable" {
		t.Errorf("TestOIDC = %v, %v, %v; want false, issuer_unreachable, nil", ok, reason, err)
	}
	want := "/v1/environments/" + env + "/connections/" + con + "/oidc:test"
	calls := srv.Calls()
	if last := calls[len(calls)-1]; last.Method != http.MethodPost || last.Path != want || len(last.Body) != 0 {
		t.Errorf("last call = %s %s %q, want POST %s without a body", last.Method, last.Path, last.Body, want)
	}
}

func TestTestOIDCUnavailableNotRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault func(*fakefederation.Server)
	}{
		{"503", func(s *fakefederation.Server) { s.On(http.MethodPost).Unavailable() }},
		{"answer without ok", func(s *fakefederation.Server) { s.On(http.MethodPost).FailWith(http.StatusOK, `{"reason": null}`) }},
		{"not JSON", func(s *fakefederation.Server) { s.On(http.MethodPost).FailWith(http.StatusOK, `ok`) }},
		{"hang", func(s *fakefederation.Server) { s.On(http.MethodPost).Hang(time.Minute) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, c := setup(t, federation.HTTPConfig{Timeout: 50 * time.Millisecond})
			tt.fault(srv)
			_, _, err := c.TestOIDC(context.Background(), env, con)
			if !errors.Is(err, federation.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if n := countCalls(srv, http.MethodPost); n != 1 {
				t.Errorf("POST calls = %d, want 1", n)
			}
		})
	}
}
