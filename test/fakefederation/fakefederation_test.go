package fakefederation_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/test/fakefederation"
)

const (
	token    = "fake-token"
	oidcPath = "/v1/environments/env_1/connections/con_1/oidc"
	testPath = oidcPath + ":test"
	goodBody = `{"issuer": "https://idp.acme.example", "client_id": "abc", "client_secret": "s3cr3t",
		"scopes": ["openid"], "redirect_uri": "https://login.shop.example/sso/con_1/callback"}`
)

func setup(t *testing.T) *fakefederation.Server {
	t.Helper()
	srv := fakefederation.New(token)
	t.Cleanup(srv.Close)
	return srv
}

type answer struct {
	status int
	body   string
}

// call sends one request with the fake's token and returns the answer.
func call(t *testing.T, srv *fakefederation.Server, method, path, body string) answer {
	t.Helper()
	return callCtx(t, context.Background(), srv, method, path, body, token)
}

func callCtx(t *testing.T, ctx context.Context, srv *fakefederation.Server, method, path, body, tok string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, srv.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{status: -1, body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: strings.TrimSpace(string(b))}
}

func TestStoresMaterialAndSecret(t *testing.T) {
	t.Parallel()
	srv := setup(t)

	if got := call(t, srv, http.MethodPut, oidcPath, goodBody); got.status != http.StatusNoContent {
		t.Fatalf("PUT = %+v, want 204", got)
	}
	if got := srv.SecretOf("env_1", "con_1"); got != "s3cr3t" {
		t.Errorf("SecretOf = %q, want s3cr3t", got)
	}
	m, ok := srv.Material("env_1", "con_1")
	want := federation.Material{Issuer: "https://idp.acme.example", ClientID: "abc", Scopes: []string{"openid"},
		RedirectURI: "https://login.shop.example/sso/con_1/callback"}
	if diff := cmp.Diff(want, m); !ok || diff != "" {
		t.Errorf("Material = %v (stored %v), diff (-want +got):\n%s", m, ok, diff)
	}

	got := call(t, srv, http.MethodGet, oidcPath, "")
	if got.status != http.StatusOK {
		t.Fatalf("GET = %+v, want 200", got)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(got.body), &body); err != nil {
		t.Fatal(err)
	}
	wantBody := map[string]any{"issuer": "https://idp.acme.example", "client_id": "abc", "scopes": []any{"openid"},
		"redirect_uri": "https://login.shop.example/sso/con_1/callback", "secret_set": true}
	if diff := cmp.Diff(wantBody, body); diff != "" {
		t.Errorf("GET body (-want +got):\n%s", diff)
	}

	if srv.SecretOf("env_1", "con_2") != "" {
		t.Error("SecretOf an unknown connection is not empty")
	}
	if _, ok := srv.Material("env_2", "con_1"); ok {
		t.Error("material is not kept per environment")
	}
}

func TestRequiresTheToken(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	for _, tok := range []string{"", "other"} {
		got := callCtx(t, context.Background(), srv, http.MethodPut, oidcPath, goodBody, tok)
		if got.status != http.StatusUnauthorized {
			t.Errorf("token %q: status = %d, want 401", tok, got.status)
		}
	}
	if srv.SecretOf("env_1", "con_1") != "" {
		t.Error("an unauthorized PUT was stored")
	}
	if n := len(srv.Calls()); n != 2 {
		t.Errorf("calls = %d, want the 2 refused calls recorded", n)
	}
}

func TestAnswersLikeTheService(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		method, path string
		body         string
		want         answer
	}{
		{"malformed JSON", http.MethodPut, oidcPath, `{`, answer{400, `{"error":"malformed_request"}`}},
		{"unknown field", http.MethodPut, oidcPath, `{"issuer": "https://x.example", "extra": 1}`, answer{400, `{"error":"malformed_request"}`}},
		{"malformed material", http.MethodPut, oidcPath, `{"issuer": "http://x", "client_id": "a", "client_secret": "s", "scopes": ["openid"], "redirect_uri": "https://r.example"}`,
			answer{422, `{"errors":[{"pointer":"/issuer","code":"invalid"}]}`}},
		{"GET without material", http.MethodGet, oidcPath, ``, answer{404, `{"error":"not_found"}`}},
		{"test without material", http.MethodPost, testPath, ``, answer{404, `{"error":"not_found"}`}},
		{"unknown path", http.MethodGet, "/v1/environments/env_1/oidc", ``, answer{404, `{"error":"not_found"}`}},
		{"unknown action", http.MethodPost, oidcPath + ":rotate", ``, answer{404, `{"error":"not_found"}`}},
		{"wrong method on oidc", http.MethodDelete, oidcPath, ``, answer{405, `{"error":"method_not_allowed"}`}},
		{"wrong method on test", http.MethodGet, testPath, ``, answer{405, `{"error":"method_not_allowed"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := setup(t)
			if diff := cmp.Diff(tt.want, call(t, srv, tt.method, tt.path, tt.body), cmp.AllowUnexported(answer{})); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTestResult(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	call(t, srv, http.MethodPut, oidcPath, goodBody)

	if got := call(t, srv, http.MethodPost, testPath, ""); got != (answer{200, `{"ok":true,"reason":null}`}) {
		t.Errorf("default test = %+v", got)
	}
	srv.TestResult("env_1", "con_1", false, "issuer_unreachable")
	if got := call(t, srv, http.MethodPost, testPath, ""); got != (answer{200, `{"ok":false,"reason":"issuer_unreachable"}`}) {
		t.Errorf("set test = %+v", got)
	}
}

func TestCallsRecordBodies(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	call(t, srv, http.MethodPut, oidcPath, goodBody)
	call(t, srv, http.MethodGet, oidcPath, "")

	calls := srv.Calls()
	want := []fakefederation.Call{
		{Method: http.MethodPut, Path: oidcPath, Body: []byte(goodBody)},
		{Method: http.MethodGet, Path: oidcPath, Body: []byte{}},
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	calls[0].Body[0] = 'X'
	if srv.Calls()[0].Body[0] != '{' {
		t.Error("Calls shares its bodies with the fake")
	}
}

func TestFaultsAnswerInOrder(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	srv.Next(1).Unavailable()
	srv.Next(2).Reject(federation.FieldError{Pointer: "/issuer", Code: "issuer_unreachable"})
	srv.Next(1).FailWith(http.StatusTeapot, `{"x":1}`)

	want := []answer{
		{503, `{"error":"unavailable"}`},
		{422, `{"errors":[{"pointer":"/issuer","code":"issuer_unreachable"}]}`},
		{422, `{"errors":[{"pointer":"/issuer","code":"issuer_unreachable"}]}`},
		{418, `{"x":1}`},
		{204, ``},
	}
	for i, w := range want {
		if got := call(t, srv, http.MethodPut, oidcPath, goodBody); got != w {
			t.Errorf("call %d = %+v, want %+v", i, got, w)
		}
	}
}

func TestFaultsPerMethodAndUntilCleared(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	srv.On(http.MethodGet).Unavailable()
	srv.On(http.MethodPost).Next(1).Reject()

	if got := call(t, srv, http.MethodPut, oidcPath, goodBody); got.status != 204 {
		t.Errorf("PUT = %+v, want 204: the faults are for GET and POST", got)
	}
	for range 3 {
		if got := call(t, srv, http.MethodGet, oidcPath, ""); got.status != 503 {
			t.Errorf("GET = %+v, want 503 until cleared", got)
		}
	}
	if got := call(t, srv, http.MethodPost, testPath, ""); got != (answer{422, `{"errors":[]}`}) {
		t.Errorf("first POST = %+v, want 422", got)
	}
	if got := call(t, srv, http.MethodPost, testPath, ""); got.status != 200 {
		t.Errorf("second POST = %+v, want 200", got)
	}
	srv.Clear()
	if got := call(t, srv, http.MethodGet, oidcPath, ""); got.status != 200 {
		t.Errorf("GET after Clear = %+v, want 200", got)
	}
}

func TestUnlimitedFaultShadowsLaterOnes(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	srv.Unavailable()
	srv.Next(1).FailWith(http.StatusTeapot, ``)
	for range 2 {
		if got := call(t, srv, http.MethodGet, oidcPath, ""); got.status != 503 {
			t.Errorf("GET = %+v, want 503", got)
		}
	}
}

func TestHangThenAnswers(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	srv.Next(1).Hang(100 * time.Millisecond)
	start := time.Now()
	got := call(t, srv, http.MethodPut, oidcPath, goodBody)
	if got.status != 204 {
		t.Errorf("PUT = %+v, want 204 after the delay", got)
	}
	if elapsed := time.Since(start); elapsed < 100*time.Millisecond {
		t.Errorf("answered after %s, want at least 100ms", elapsed)
	}
}

func TestHangRespectsTheClient(t *testing.T) {
	t.Parallel()
	srv := fakefederation.New(token)
	srv.Hang(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()

	got := callCtx(t, ctx, srv, http.MethodPut, oidcPath, goodBody, token)
	if got.status != -1 || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("answer = %+v, want the client to give up", got)
	}
	if srv.SecretOf("env_1", "con_1") != "" {
		t.Error("a call the client gave up on was stored")
	}
	start := time.Now()
	srv.Close()
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Close took %s: the hanging handler did not return", elapsed)
	}
}

func TestCloseReleasesHangingCalls(t *testing.T) {
	t.Parallel()
	srv := fakefederation.New(token)
	srv.Hang(time.Hour)
	done := make(chan answer)
	go func() { done <- call(t, srv, http.MethodGet, oidcPath, "") }()
	for len(srv.Calls()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	srv.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a hanging call outlived Close")
	}
}

func TestNextNeedsAPositiveCount(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	defer func() {
		if recover() == nil {
			t.Error("Next(0) did not panic")
		}
	}()
	srv.Next(0)
}
