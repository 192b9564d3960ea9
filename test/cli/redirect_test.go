package cli_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A redirect is never followed: an apply that answers 307 must not resend
// its body, secrets included, to the Location; nor a read, its API key.
func TestApplyRedirectIsAnErrorNamingTheLocationAndNothingReachesIt(t *testing.T) {
	t.Parallel()
	const id = "cfgp_01m4qpqtywfs7930tb6kqn5rc5"
	elsewhere := newFakeAPI(t, nil)
	location := elsewhere.URL + "/v1/config-plans/" + id + ":apply"
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writePlan(w, id, acmeSecret)
			return
		}
		w.Header().Set("Location", location)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	canary := "canary-redirected-secret"
	r := runAgainst(t, api.URL, invocation{env: map[string]string{acmeSecret: canary}},
		"config", "apply", id, "--secrets-from-env", "--sp-host", "login.shop.example", "--idempotency-key", "deploy-1")
	wantExit(t, r, 1)
	want := "Error: the API answered HTTP 307 Temporary Redirect, a redirect to " + location + "; keenauth never follows a redirect"
	if !strings.HasPrefix(r.stderr, want) {
		t.Errorf("stderr\n%q\nwant it to start with\n%q", r.stderr, want)
	}
	if strings.Contains(r.output(), canary) {
		t.Errorf("the secret was printed:\n%s", r.output())
	}
	if got := elsewhere.requests(); len(got) != 0 {
		t.Errorf("the Location received %d request(s):\n%s", len(got), strings.Join(got, "\n\n"))
	}
	// The redirected apply carried the secret, and was not retried.
	var applies []string
	for _, req := range api.requests() {
		if strings.HasPrefix(req, "POST ") {
			applies = append(applies, req)
		}
	}
	if len(applies) != 1 || !strings.Contains(applies[0], canary) {
		t.Errorf("apply requests the API received (want one, with the secret):\n%s", strings.Join(applies, "\n\n"))
	}
}

func TestReadRedirectIsAnErrorNamingTheLocation(t *testing.T) {
	t.Parallel()
	const id = "cfgp_01m4qpqtywfs7930tb6kqn5rc5"
	for _, c := range []struct {
		name     string
		status   int
		location string // "" sends none; a leading / is relative to the API
		want     string // the message after "a redirect "
	}{
		{"301 absolute", http.StatusMovedPermanently, "elsewhere", "to elsewhere"},
		{"302 absolute", http.StatusFound, "elsewhere", "to elsewhere"},
		{"303 absolute", http.StatusSeeOther, "elsewhere", "to elsewhere"},
		{"307 absolute", http.StatusTemporaryRedirect, "elsewhere", "to elsewhere"},
		{"308 absolute", http.StatusPermanentRedirect, "elsewhere", "to elsewhere"},
		{"302 relative", http.StatusFound, "/login?next=%2Fv1", "to api/login?next=%2Fv1"},
		{"300 without Location", http.StatusMultipleChoices, "", "with no Location"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			elsewhere := newFakeAPI(t, nil)
			location := strings.Replace(c.location, "elsewhere", elsewhere.URL+"/v1/config-plans/"+id, 1)
			api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
				if location != "" {
					w.Header().Set("Location", location)
				}
				w.WriteHeader(c.status)
			})
			want := strings.NewReplacer("elsewhere", elsewhere.URL+"/v1/config-plans/"+id, "api/", api.URL+"/").Replace(c.want)
			for _, args := range [][]string{{"config", "show", id}, {"plans", "list", "--json"}} {
				r := runAgainst(t, api.URL, invocation{}, args...)
				wantExit(t, r, 1)
				head := fmt.Sprintf("Error: the API answered HTTP %d %s, a redirect %s; keenauth never follows a redirect",
					c.status, http.StatusText(c.status), want)
				if !strings.HasPrefix(r.stderr, head) {
					t.Errorf("keenauth %s: stderr\n%q\nwant it to start with\n%q", strings.Join(args, " "), r.stderr, head)
				}
				if r.stdout != "" {
					t.Errorf("keenauth %s: stdout %q", strings.Join(args, " "), r.stdout)
				}
			}
			if got := api.requests(); len(got) != 2 {
				t.Errorf("the API received %d requests, want 2 (no retry):\n%s", len(got), strings.Join(got, "\n\n"))
			}
			if got := elsewhere.requests(); len(got) != 0 {
				t.Errorf("the Location received %d request(s):\n%s", len(got), strings.Join(got, "\n\n"))
			}
		})
	}
}
