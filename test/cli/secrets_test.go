package cli_test

import (
	"crypto/rand"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// envReads records the names of the environment variables a run read.
type envReads struct {
	mu    sync.Mutex
	names []string
}

func (e *envReads) read(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.names = append(e.names, name)
}

func (e *envReads) has(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.names, name)
}

// An API URL that is not the Keenauth API (mistyped, or hostile) lists a
// variable that is not a Keenauth secret in the plan's required_secrets:
// the CLI refuses it without reading it, and sends no apply.
func TestSecretsFromEnvRefusesANameNotOfKeenauthBeforeAnyApply(t *testing.T) {
	t.Parallel()
	const id = "cfgp_01m4qpqtywfs7930tb6kqn5rc5"
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		writePlan(w, id, acmeSecret, "AWS_SECRET_ACCESS_KEY")
	})
	canary := "canary-" + rand.Text()
	keenauthCanary := "canary-" + rand.Text()
	for _, extra := range [][]string{nil, {"--json"}} {
		reads := &envReads{}
		inv := invocation{env: map[string]string{"AWS_SECRET_ACCESS_KEY": canary, acmeSecret: keenauthCanary}, read: reads.read}
		args := append([]string{"config", "apply", id, "--secrets-from-env", "--sp-host", "login.shop.example"}, extra...)
		r := runAgainst(t, api.URL, inv, args...)
		wantExit(t, r, 1)
		want := `Error: plan ` + id + ` asks for secret(s) "AWS_SECRET_ACCESS_KEY", but --secrets-from-env reads only ` +
			`environment variables named KEENAUTH_[A-Z0-9_]+ (check that KEENAUTH_API_URL points at your Keenauth API); ` +
			"no apply request was sent.\n"
		if r.stderr != want {
			t.Errorf("keenauth %s: stderr\n%q\nwant\n%q", strings.Join(args, " "), r.stderr, want)
		}
		if r.stdout != "" {
			t.Errorf("keenauth %s: stdout %q", strings.Join(args, " "), r.stdout)
		}
		for _, c := range []string{canary, keenauthCanary} {
			if strings.Contains(r.output(), c) {
				t.Errorf("keenauth %s printed a secret:\n%s", strings.Join(args, " "), r.output())
			}
		}
		if reads.has("AWS_SECRET_ACCESS_KEY") {
			t.Errorf("keenauth %s read AWS_SECRET_ACCESS_KEY", strings.Join(args, " "))
		}
	}
	got := api.requests()
	for _, req := range got {
		if !strings.HasPrefix(req, "GET /v1/config-plans/"+id+"\n") {
			t.Errorf("the API received a request other than reading the plan:\n%s", req)
		}
		if strings.Contains(req, canary) || strings.Contains(req, keenauthCanary) {
			t.Errorf("a request carried a secret:\n%s", req)
		}
	}
	if len(got) != 2 {
		t.Errorf("the API received %d requests, want the 2 reads of the plan", len(got))
	}
}

func TestSecretsFromEnvReadsOnlyKeenauthNames(t *testing.T) {
	t.Parallel()
	const id = "cfgp_01m4qpqtywfs7930tb6kqn5rc5"
	for _, c := range []struct {
		name string
		read bool
	}{
		{acmeSecret, true},
		{"KEENAUTH_1", true},
		{"KEENAUTH__", true},
		{"KEENAUTH_", false},
		{"keenauth_connection_acme_sso_client_secret", false},
		{"KEENAUTH_connection", false},
		{"KEENAUTH_A-B", false},
		{"KEENAUTH_É", false},
		{"KEENAUTH_A\n", false},
		{" KEENAUTH_A", false},
		{"XKEENAUTH_A", false},
		{"PATH", false},
		{"AWS_SECRET_ACCESS_KEY", false},
	} {
		t.Run(strconv.Quote(c.name), func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					writePlan(w, id, c.name)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"id":"` + id + `","object":"config_plan","status":"applied","changes":[]}`))
			})
			value := "value-" + rand.Text()
			reads := &envReads{}
			r := runAgainst(t, api.URL, invocation{env: map[string]string{c.name: value}, read: reads.read},
				"config", "apply", id, "--secrets-from-env", "--json")
			var applies []string
			for _, req := range api.requests() {
				if strings.HasPrefix(req, "POST ") {
					applies = append(applies, req)
				}
			}
			if !c.read {
				wantExit(t, r, 1)
				if !strings.Contains(r.stderr, "asks for secret(s) "+strconv.Quote(c.name)+", ") {
					t.Errorf("stderr does not name %q:\n%s", c.name, r.stderr)
				}
				if reads.has(c.name) || len(applies) != 0 || strings.Contains(r.output(), value) {
					t.Errorf("read %v, %d apply requests, output:\n%s", reads.has(c.name), len(applies), r.output())
				}
				return
			}
			must(t, r)
			if len(applies) != 1 || !strings.Contains(applies[0], `"resolved_secrets":{"`+c.name+`":"`+value+`"}`) {
				t.Errorf("apply requests (want one with the secret):\n%s", strings.Join(applies, "\n\n"))
			}
		})
	}
}
