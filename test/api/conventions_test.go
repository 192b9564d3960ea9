package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// contractProblem is a problem details answer with the members this spec names.
type contractProblem struct {
	Type                string              `json:"type"`
	Title               string              `json:"title"`
	Status              int                 `json:"status"`
	Code                string              `json:"code"`
	Detail              string              `json:"detail"`
	Errors              []config.FieldError `json:"errors"`
	RequestID           string              `json:"request_id"`
	RequiredPermissions []string            `json:"required_permissions"`
}

// expectProblem checks that r is the problem status/code with the members
// every problem has, and returns it.
func expectProblem(t *testing.T, r *apitest.Response, status int, code string) contractProblem {
	t.Helper()
	if r.Status != status || r.Code() != code {
		t.Fatalf("answer = %d %q, want %d %q: %s", r.Status, r.Code(), status, code, r.Body)
	}
	var p contractProblem
	r.Decode(t, &p)
	if p.Type != "https://docs.keenauth.dev/errors/"+code {
		t.Errorf("type = %q", p.Type)
	}
	if p.Status != status {
		t.Errorf("status member = %d, want %d", p.Status, status)
	}
	if p.Title == "" || p.Detail == "" {
		t.Errorf("title %q, detail %q: both must be set", p.Title, p.Detail)
	}
	if p.RequestID == "" || p.RequestID != r.Header.Get("Request-Id") {
		t.Errorf("request_id = %q, Request-Id header = %q", p.RequestID, r.Header.Get("Request-Id"))
	}
	if errs, ok := r.JSON()["errors"].([]any); !ok || errs == nil {
		t.Errorf("errors member is not an array: %s", r.Body)
	}
	return p
}

// problemLines renders problems as sorted "pointer code" lines.
func problemLines(errs []config.FieldError) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Pointer+" "+string(e.Code))
	}
	slices.Sort(out)
	return out
}

// expectErrors checks the pointers and codes of p's errors (in any order)
// and that each has a detail.
func expectErrors(t *testing.T, p contractProblem, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, problemLines(p.Errors)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	for _, e := range p.Errors {
		if e.Detail == "" {
			t.Errorf("problem %s %s has no detail", e.Pointer, e.Code)
		}
	}
}

// keyWithPerms creates a key of the harness's environment and returns its id and
// secret.
func keyWithPerms(t *testing.T, e *apitest.Env, perms ...string) (id, secret string) {
	t.Helper()
	k, err := e.Domain.Keys.CreateKey(context.Background(), e.EnvID, perms)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return k.ID, k.Secret
}

func TestUnknownPathAnswers404Problem(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for _, r := range []apitest.Request{
		{Method: "GET", Path: "/v1/nothing-here"},
		{Method: "GET", Path: "/v1/nothing-here", Secret: "-"},
		{Method: "POST", Path: "/v1/config-plans/x/y"},
		{Method: "GET", Path: "/v1/config/"},
		{Method: "GET", Path: "/v1/config-plans/"},
		{Method: "POST", Path: "/v1/config-plans/", Body: `{"config": {"branding": {"primary_color": "#000000"}}}`},
		{Method: "GET", Path: "/nothing-here"},
		{Method: "GET", Path: "/v2/config"},
		{Method: "POST", Path: "/v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5:explode", Body: "{}"},
		{Method: "POST", Path: "/v1/config-revisions/cfgr_01m4qpqtywfs7930tb6kqn5rc5:apply", Body: "{}"},
		{Method: "POST", Path: "/v1/connections/github:delete", Body: "{}"},
	} {
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			resp := e.Do(r)
			expectProblem(t, resp, http.StatusNotFound, "not_found")
			if strings.HasPrefix(r.Path, "/v1/") && resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control = %q", resp.Header.Get("Cache-Control"))
			}
		})
	}
}

func TestWrongMethodAnswers405ProblemWithAllow(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for _, tt := range []struct {
		method, path, allow string
	}{
		{"DELETE", "/v1/config-plans", "GET, POST"},
		{"PUT", "/v1/config", "GET"},
		{"PATCH", "/v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5", "GET, POST"},
		{"POST", "/v1/config", "GET"},
		{"GET", "/internal/v1/token-activity", "POST"},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			// No key: the method is refused before authentication.
			resp := e.Do(apitest.Request{Method: tt.method, Path: tt.path, Secret: "-"})
			expectProblem(t, resp, http.StatusMethodNotAllowed, "method_not_allowed")
			allow := strings.Split(resp.Header.Get("Allow"), ", ")
			slices.Sort(allow)
			if got := strings.Join(allow, ", "); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
		})
	}
}

func TestProblemHasExactlyTheContractMembers(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	_, readOnly := keyWithPerms(t, e, config.PermConfigRead)
	tests := []struct {
		name  string
		req   apitest.Request
		extra []string
	}{
		{"not_found", apitest.Request{Method: "GET", Path: "/v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5"}, nil},
		{"unauthenticated", apitest.Request{Method: "GET", Path: "/v1/config", Secret: "-"}, nil},
		{"validation_failed", apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: `{"config": {}}`}, nil},
		{"insufficient_permissions", apitest.Request{Method: "GET", Path: "/v1/config", Secret: readOnly}, []string{"required_permissions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do(tt.req)
			if r.Code() != tt.name {
				t.Fatalf("code = %q: %s", r.Code(), r.Body)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var members map[string]json.RawMessage
			r.Decode(t, &members)
			var got []string
			for k := range members {
				got = append(got, k)
			}
			want := append([]string{"type", "title", "status", "code", "detail", "errors", "request_id"}, tt.extra...)
			slices.Sort(got)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestIDKeptWhenWellFormedAndReplacedOtherwise(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	const incoming = "req_01m4qpqtywfs7930tb6kqn5rc5"
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config", Header: map[string]string{"Request-Id": incoming}})
	if r.Status != http.StatusOK || r.Header.Get("Request-Id") != incoming {
		t.Errorf("well-formed incoming id: %d, Request-Id %q", r.Status, r.Header.Get("Request-Id"))
	}
	for _, bad := range []string{"abc", "req_", "req_01M4QPQTYWFS7930TB6KQN5RC5", incoming + "x", "req_01m4qpqtywfs7930tb6kqn5rc5\n"} {
		r := e.Do(apitest.Request{Method: "GET", Path: "/v1/nothing", Header: map[string]string{"Request-Id": bad}})
		got := r.Header.Get("Request-Id")
		if got == bad || !config.ValidID(config.PrefixRequest, got) {
			t.Errorf("incoming %q: Request-Id = %q, want a new req_ id", bad, got)
		}
		if p := expectProblem(t, r, http.StatusNotFound, "not_found"); p.RequestID != got {
			t.Errorf("request_id %q, header %q", p.RequestID, got)
		}
	}
	a := e.Do(apitest.Request{Method: "GET", Path: "/healthz"})
	b := e.Do(apitest.Request{Method: "GET", Path: "/healthz"})
	if a.Header.Get("Request-Id") == b.Header.Get("Request-Id") {
		t.Errorf("two requests share Request-Id %q", a.Header.Get("Request-Id"))
	}
}

func TestSuccessfulV1AnswersAreNotStored(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for _, path := range []string{"/v1/config", "/v1/config-plans", "/v1/openapi.json"} {
		r := e.Do(apitest.Request{Method: "GET", Path: path})
		if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: %d, Cache-Control %q", path, r.Status, r.Header.Get("Cache-Control"))
		}
	}
}
