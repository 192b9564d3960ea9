// Package cli_test runs the keenauth CLI end to end against a real
// keenauthd router, in process, over the test's own PostgreSQL database,
// Redis key prefix and fake federation service.
package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/cli"
	"github.com/keenauth/configplans/test/apitest"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// harness is a running API and the CLI pointed at it.
type harness struct {
	*apitest.Env
	URL string
}

func setup(t *testing.T) *harness {
	t.Helper()
	e := apitest.Setup(t, apitest.Options{})
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	return &harness{Env: e, URL: srv.URL}
}

// result is what one run of the CLI left.
type result struct {
	args   []string
	code   int
	stdout string
	stderr string
}

// output is everything the run printed.
func (r result) output() string { return r.stdout + r.stderr }

// JSON decodes stdout.
func (r result) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("keenauth %s: stdout is not JSON: %v\n%s\nstderr: %s", strings.Join(r.args, " "), err, r.stdout, r.stderr)
	}
	return m
}

// invocation changes how the CLI runs: extra environment variables (""
// unsets), standard input, and terminals.
type invocation struct {
	env       map[string]string
	stdin     string
	stdoutTTY bool
	stderrTTY bool
	// read, when set, is told the name of every environment variable the
	// CLI reads.
	read func(name string)
}

// ttyBuffer is an output that says it is a terminal.
type ttyBuffer struct{ bytes.Buffer }

func (*ttyBuffer) IsTerminal() bool { return true }

// run runs the CLI with the harness's URL and all-permissions key.
func (h *harness) run(t *testing.T, args ...string) result {
	t.Helper()
	return h.runWith(t, invocation{}, args...)
}

func (h *harness) runWith(t *testing.T, inv invocation, args ...string) result {
	t.Helper()
	env := map[string]string{"KEENAUTH_API_URL": h.URL, "KEENAUTH_SECRET_KEY": h.Secret}
	for k, v := range inv.env {
		env[k] = v
	}
	return runCLI(t, env, inv, args...)
}

func runCLI(t *testing.T, env map[string]string, inv invocation, args ...string) result {
	t.Helper()
	var stdout, stderr ttyBuffer
	var out, errw interface {
		Write([]byte) (int, error)
		String() string
	} = &stdout.Buffer, &stderr.Buffer
	if inv.stdoutTTY {
		out = &stdout
	}
	if inv.stderrTTY {
		errw = &stderr
	}
	getenv := func(k string) string {
		if inv.read != nil {
			inv.read(k)
		}
		return env[k]
	}
	code := cli.Run(context.Background(), args, getenv, strings.NewReader(inv.stdin), out, errw)
	return result{args: args, code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// must fails t unless the run exited 0.
func must(t *testing.T, r result) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("keenauth %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// wantExit fails t unless the run exited with code.
func wantExit(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("keenauth %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), r.code, code, r.stdout, r.stderr)
	}
}

// writeJSON writes v to a file of the test's temporary directory.
func writeJSON(t *testing.T, name string, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return m
}

// seedLegacy creates the database connection "legacy" that the example
// document deletes.
func (h *harness) seedLegacy(t *testing.T) {
	t.Helper()
	p := h.Plan(map[string]any{"connections": map[string]any{"legacy": legacySpec()}}, false)
	h.Apply(p["id"].(string), map[string]any{})
}

func legacySpec() map[string]any {
	return map[string]any{"type": "database", "display_name": "Legacy", "active": true,
		"database": map[string]any{"requires_username": false}}
}

// exampleWithDeletion is the §4 document, which deletes "legacy".
func exampleWithDeletion() map[string]any {
	doc := apitest.ExampleDocument()
	doc["connections"].(map[string]any)["legacy"] = nil
	return doc
}

// noSecretDocument plans changes that need no secret and no host.
func noSecretDocument() map[string]any {
	doc := apitest.ExampleDocument()
	conns := doc["connections"].(map[string]any)
	delete(conns, "acme-sso")
	conns["legacy"] = nil
	doc["applications"].(map[string]any)["portal"].(map[string]any)["connections"] = []any{"github"}
	return doc
}

var (
	idPattern     = regexp.MustCompile(`\b(cfgp|cfgr|con|env|key|log|req|evt)_[0-9a-z]{26}\b`)
	timePattern   = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\b`)
	genKeyPattern = regexp.MustCompile(`\b[A-Z2-7]{26}\b`)
)

// mask replaces what changes from run to run: ids, times, generated
// Idempotency-Keys.
func mask(s string) string {
	s = idPattern.ReplaceAllString(s, "${1}_<id>")
	s = timePattern.ReplaceAllString(s, "<time>")
	return genKeyPattern.ReplaceAllString(s, "<key>")
}

// transcript is a run as a golden file holds it.
func transcript(runs ...result) string {
	var b strings.Builder
	for i, r := range runs {
		if i > 0 {
			b.WriteString("\n")
		}
		args := make([]string, len(r.args))
		for i, a := range r.args {
			if filepath.IsAbs(a) {
				a = filepath.Base(a) // a file of the test's temporary directory
			}
			args[i] = a
		}
		b.WriteString("$ keenauth " + strings.Join(args, " ") + "\n")
		b.WriteString(r.stdout)
		if r.stderr != "" {
			b.WriteString("[stderr]\n" + r.stderr)
		}
		b.WriteString("[exit " + strconv.Itoa(r.code) + "]\n")
	}
	return mask(b.String())
}

// golden compares got with testdata/name.golden (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got; -update rewrites it):\n%s", path, diff)
	}
}

// frontServer puts handler in front of the API: it sees every request and
// forwards those it does not answer itself.
func (h *harness) frontServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, forward func())) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler(w, r, func() { h.Handler.ServeHTTP(w, r) })
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func apitestGet(path string) apitest.Request { return apitest.Request{Method: "GET", Path: path} }

// fakeAPI is a server that is not the Keenauth API: it answers with
// handler and keeps every request it received, as sent.
type fakeAPI struct {
	URL string
	mu  sync.Mutex
	got []string
}

func newFakeAPI(t *testing.T, handler http.HandlerFunc) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.got = append(f.got, fmt.Sprintf("%s %s\n%v\n%s", r.Method, r.URL.RequestURI(), r.Header, body))
		f.mu.Unlock()
		if handler != nil {
			handler(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// requests returns every request received: the method and URI, the
// headers and the body.
func (f *fakeAPI) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

// runAgainst runs the CLI against url with env besides a made-up key.
func runAgainst(t *testing.T, url string, inv invocation, args ...string) result {
	t.Helper()
	env := map[string]string{"KEENAUTH_API_URL": url, "KEENAUTH_SECRET_KEY": "ksk_test_" + strings.Repeat("0", 32)}
	for k, v := range inv.env {
		env[k] = v
	}
	return runCLI(t, env, inv, args...)
}

// writePlan answers a plan object with these required secrets.
func writePlan(w http.ResponseWriter, id string, requiredSecrets ...string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "config_plan", "status": "planned",
		"changes": []any{}, "warnings": []any{}, "required_secrets": requiredSecrets})
}
