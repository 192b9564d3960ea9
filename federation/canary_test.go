package federation_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/test/fakefederation"
)

const canary = "canary-s3cr3t-ZXY"

// canaryForms is the canary as sent and in the encodings a service or a
// library could quote it in.
func canaryForms() []string {
	b := []byte(canary)
	return []string{
		canary,
		base64.StdEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b),
		base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b),
		strings.ToUpper(hex.EncodeToString(b)),
	}
}

// rawServer answers every request with the bytes of answer, bypassing
// net/http's writer, then closes the connection.
func rawServer(t *testing.T, answer string) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString(answer)
		_ = buf.Flush()
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestCanarySecretNeverInErrors fails a PUT in every way we know, with
// answers that echo the secret, and checks no error text carries it.
func TestCanarySecretNeverInErrors(t *testing.T) {
	t.Parallel()
	forms := canaryForms()
	echo := `{"error": "bad secret ` + canary + `", "b64": "` + forms[1] + `", "hex": "` + forms[5] + `"}`

	type fakeCase struct {
		name  string
		token string
		fault func(*fakefederation.Server)
		m     federation.Material
	}
	fakeCases := []fakeCase{
		{name: "reject quoting the secret", fault: func(s *fakefederation.Server) {
			s.Reject(
				federation.FieldError{Pointer: "/client_secret/" + canary, Code: canary},
				federation.FieldError{Pointer: "/client_secret", Code: "x" + forms[1]},
				federation.FieldError{Pointer: "/client_secret", Code: "x" + forms[4]},
				federation.FieldError{Pointer: "/client_secret", Code: "x" + forms[5]},
				federation.FieldError{Pointer: "/" + forms[6], Code: "invalid"},
			)
		}},
		{name: "422 unparseable", fault: func(s *fakefederation.Server) { s.FailWith(422, canary+" is wrong") }},
		{name: "422 echo", fault: func(s *fakefederation.Server) { s.FailWith(422, echo) }},
		{name: "400 echo", fault: func(s *fakefederation.Server) { s.FailWith(400, echo) }},
		{name: "401 echo", fault: func(s *fakefederation.Server) { s.FailWith(401, echo) }},
		{name: "403 echo", fault: func(s *fakefederation.Server) { s.FailWith(403, echo) }},
		{name: "404 echo", fault: func(s *fakefederation.Server) { s.FailWith(404, echo) }},
		{name: "409 echo", fault: func(s *fakefederation.Server) { s.FailWith(409, echo) }},
		{name: "307 echo", fault: func(s *fakefederation.Server) { s.FailWith(307, echo) }},
		{name: "500 echo", fault: func(s *fakefederation.Server) { s.FailWith(500, echo) }},
		{name: "503", fault: func(s *fakefederation.Server) { s.Unavailable() }},
		{name: "hang beyond the timeout", fault: func(s *fakefederation.Server) { s.Hang(time.Minute) }},
		{name: "bad token", token: "wrong-token"},
		{name: "material refused by the service", m: federation.Material{Issuer: "http://x", Scopes: []string{canary}}},
	}
	for _, tc := range fakeCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, c := setup(t, federation.HTTPConfig{Token: tc.token, Timeout: 50 * time.Millisecond})
			if tc.fault != nil {
				tc.fault(srv)
			}
			m := material
			if tc.m.Issuer != "" {
				m = tc.m
			}
			err := c.PutOIDC(context.Background(), env, con, m, canary)
			assertNoCanary(t, err, forms)
		})
	}

	rawCases := []struct {
		name   string
		answer string
	}{
		{"status line quoting the secret", "HTTP/1.1 " + canary + " OK\r\n\r\n"},
		{"status line quoting it in base64", "HTTP/1.1 " + forms[1] + " OK\r\n\r\n"},
		{"status line quoting it in hex", "HTTP/1.1 " + forms[5] + " OK\r\n\r\n"},
		{"header quoting the secret", "HTTP/1.1 204 No Content\r\n" + canary + "\r\n\r\n"},
		{"connection closed mid-answer", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + canary},
		{"not HTTP", canary + "\r\n"},
	}
	for _, tc := range rawCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := federation.NewHTTPClient(federation.HTTPConfig{
				BaseURL: rawServer(t, tc.answer), Token: token, Timeout: time.Second, Backoff: time.Millisecond,
			})
			err := c.PutOIDC(context.Background(), env, con, material, canary)
			assertNoCanary(t, err, forms)
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := fakefederation.New(token)
		base := srv.URL()
		srv.Close()
		c := federation.NewHTTPClient(federation.HTTPConfig{BaseURL: base, Token: token, Backoff: time.Millisecond})
		assertNoCanary(t, c.PutOIDC(context.Background(), env, con, material, canary), forms)
	})
}

func assertNoCanary(t *testing.T, err error, forms []string) {
	t.Helper()
	if err == nil {
		t.Fatal("PutOIDC succeeded; the case should fail")
	}
	for _, text := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		for _, f := range append(forms, token) {
			if strings.Contains(text, f) {
				t.Errorf("error %q carries %q", text, f)
			}
		}
	}
}

// The raw server must reach the client as written; check the helper once.
func TestRawServerAnswersAsWritten(t *testing.T) {
	t.Parallel()
	resp, err := http.Get(rawServer(t, "HTTP/1.1 418 Teapot\r\nContent-Length: 0\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("status = %d, want 418", resp.StatusCode)
	}
}
