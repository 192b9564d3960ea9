package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
)

// environment is a second environment of the harness's API, served at a
// URL of its own, with a key holding every permission. Every request it
// receives is kept (method, URI, body), as is every request to the
// harness's own environment made through target().
type environment struct {
	URL, ID, Secret string
	mu              sync.Mutex
	got             []string
}

func (h *harness) newEnvironment(t *testing.T, name string) *environment {
	t.Helper()
	env, err := h.Domain.Environments.CreateEnvironment(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	k, err := h.Domain.Keys.CreateKey(context.Background(), env.ID, config.AllPermissions())
	if err != nil {
		t.Fatal(err)
	}
	e := &environment{ID: env.ID, Secret: k.Secret}
	e.URL = h.recording(t, e)
	return e
}

// recording serves the API at a new URL, keeping each request in e.
func (h *harness) recording(t *testing.T, e *environment) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := readAll(r)
		e.mu.Lock()
		e.got = append(e.got, r.Method+" "+r.URL.RequestURI()+"\n"+r.Header.Get("Authorization")+"\n"+string(body))
		e.mu.Unlock()
		h.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// target is the harness's own environment behind a recording URL.
func (h *harness) target(t *testing.T) *environment {
	e := &environment{ID: h.EnvID, Secret: h.Secret}
	e.URL = h.recording(t, e)
	return e
}

func (e *environment) requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

// run runs the CLI against this environment.
func (e *environment) run(t *testing.T, inv invocation, args ...string) result {
	t.Helper()
	env := map[string]string{"KEENAUTH_API_URL": e.URL, "KEENAUTH_SECRET_KEY": e.Secret}
	for k, v := range inv.env {
		env[k] = v
	}
	return runCLI(t, env, inv, args...)
}

// templateYAML is a document with placeholders whole (typed) and inside
// longer strings, a $${ escape, and a placeholder-like resource key that
// stays as it is.
const templateYAML = `environment_settings:
  display_name: Shop ${ENV_LABEL}
  default_locale: en
  session_lifetime_hours: ${SESSION_HOURS}
apis:
  orders:
    identifier: https://${API_HOST}/orders
    display_name: Orders
    scopes: ${ORDER_SCOPES}
    token_lifetime_seconds: ${TOKEN_LIFETIME}
roles:
  support:
    display_name: Support
    description: reads $${ORDERS} in ${ENV_LABEL}
`

func TestPlanReplacesPlaceholdersBeforeSending(t *testing.T) {
	t.Parallel()
	h := setup(t)
	doc := writeFile(t, "keenauth.yaml", templateYAML)
	base := writeFile(t, "base.json", `{"ENV_LABEL": "base", "API_HOST": "api.base.example", "SESSION_HOURS": 72,
		"ORDER_SCOPES": [{"value": "read:orders", "description": "Read orders"}], "TOKEN_LIFETIME": 60, "UNUSED": "x"}`)
	staging := writeFile(t, "staging.yaml", "ENV_LABEL: (staging)\nTOKEN_LIFETIME: 600\n")

	for _, preview := range []bool{false, true} {
		args := []string{"config", "plan", "-f", doc, "--vars", base, "--vars", staging, "--var", "API_HOST=api.staging.example", "--json"}
		if preview {
			args = append(args, "--preview")
		}
		r := must(t, h.run(t, args...))
		specs := map[string]any{}
		for _, c := range r.JSON(t)["changes"].([]any) {
			c := c.(map[string]any)
			specs[c["kind"].(string)+"/"+c["key"].(string)] = c["spec"]
		}
		want := map[string]any{
			"environment_settings/default": map[string]any{"display_name": "Shop (staging)", "default_locale": "en", "session_lifetime_hours": 72.0},
			"api/orders": map[string]any{"identifier": "https://api.staging.example/orders", "display_name": "Orders",
				"scopes": []any{map[string]any{"value": "read:orders", "description": "Read orders"}}, "token_lifetime_seconds": 600.0},
			"role/support": map[string]any{"display_name": "Support", "description": "reads ${ORDERS} in (staging)", "permissions": []any{}},
		}
		if diff := cmp.Diff(want, specs); diff != "" {
			t.Errorf("preview %v: the planned specs (-want +got):\n%s", preview, diff)
		}
		if want := "Warning: variable UNUSED (from " + base + ") is used by no placeholder of " + doc + ".\n"; r.stderr != want {
			t.Errorf("preview %v: stderr = %q, want %q", preview, r.stderr, want)
		}
	}
}

func TestPlanRefusesUnresolvedPlaceholdersBeforeSending(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, nil)
	doc := writeJSON(t, "keenauth.json", map[string]any{
		"apis": map[string]any{"orders": map[string]any{"identifier": "${ORDERS_URL}", "display_name": "Orders ${ENV}",
			"token_lifetime_seconds": "${LIFETIME}"}},
		"connections": map[string]any{"a/b": map[string]any{"display_name": "${lower}"}},
	})
	vars := writeFile(t, "vars.json", `{"ENV": "prod"}`)
	for _, tc := range []struct {
		args []string
		exit int
	}{
		{[]string{"config", "plan", "-f", doc, "--vars", vars}, 2},
		{[]string{"config", "plan", "-f", doc, "--vars", vars, "--detailed-exitcode"}, 1},
		{[]string{"config", "plan", "-f", doc, "--vars", vars, "--preview"}, 2},
		{[]string{"config", "plan", "-f", doc, "--vars", vars, "--preview", "--detailed-exitcode"}, 1},
	} {
		r := runAgainst(t, api.URL, invocation{}, tc.args...)
		wantExit(t, r, tc.exit)
		want := "Error: 3 placeholder(s) of " + doc + " cannot be replaced, so nothing was sent:\n" +
			"  /apis/orders/identifier: ${ORDERS_URL} has no value\n" +
			"  /apis/orders/token_lifetime_seconds: ${LIFETIME} has no value\n" +
			"  /connections/a~1b/display_name: ${lower} is not a placeholder: a name is [A-Z][A-Z0-9_]*, and $${ writes a literal ${\n" +
			"Give each variable a value with --vars FILE or --var NAME=VALUE; write $${ for a literal ${.\n"
		if r.stdout != "" || r.stderr != want {
			t.Errorf("keenauth %v:\nstdout %q\nstderr %s\nwant %s", tc.args, r.stdout, r.stderr, want)
		}
	}
	// In an export's file, the pointers are those of its config member.
	export := writeJSON(t, "export.json", map[string]any{"config": map[string]any{"apis": map[string]any{"orders": map[string]any{"identifier": "${ORDERS_URL}"}}},
		"versions": map[string]any{"api/orders": 1}})
	r := runAgainst(t, api.URL, invocation{}, "config", "plan", "-f", export)
	wantExit(t, r, 2)
	if !strings.Contains(r.stderr, "\n  /apis/orders/identifier: ${ORDERS_URL} has no value\n") {
		t.Errorf("export file: stderr %s", r.stderr)
	}
	if got := api.requests(); len(got) != 0 {
		t.Errorf("requests were sent: %v", got)
	}
}

// TestExportWithVarsRoundTripsBetweenEnvironments exports production with
// its variables, plans the template in staging with staging's, and finds
// staging's configuration to be production's with the values swapped: no
// placeholder lost (every production value became one) or leaked (none
// reached the API, none of production's values reached staging).
func TestExportWithVarsRoundTripsBetweenEnvironments(t *testing.T) {
	t.Parallel()
	h := setup(t)
	production := writeFile(t, "production.yaml", `ENV_LABEL: Shop
API_HOST: https://api.shop.example/orders
PORTAL_CALLBACK: https://portal.shop.example/callback
LIFETIME: 3600
`)
	staging := writeFile(t, "staging.yaml", `ENV_LABEL: Shop (staging)
API_HOST: https://api.staging.shop.example/orders
PORTAL_CALLBACK: https://portal.staging.shop.example/callback
LIFETIME: 600
`)
	prodDoc := noSecretDocument()
	prodDoc["environment_settings"].(map[string]any)["display_name"] = "Shop"
	prodDoc["apis"].(map[string]any)["orders"].(map[string]any)["scopes"] = []any{
		map[string]any{"value": "read:orders", "description": "Reads ${orders} and $${more}"}}
	delete(prodDoc["connections"].(map[string]any), "legacy")
	p := h.Plan(prodDoc, false)
	h.Apply(p["id"].(string), map[string]any{})

	tmplFile := filepath.Join(t.TempDir(), "keenauth.json")
	r := must(t, h.run(t, "config", "export", "--vars", production, "-o", tmplFile))
	if want := "Warning: variable LIFETIME (from " + production + ") matches no value of the export.\nWrote the configuration to " + tmplFile + "\n"; r.stderr != want {
		t.Errorf("export stderr = %q, want %q", r.stderr, want)
	}
	raw, err := os.ReadFile(tmplFile)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := string(raw)
	for _, want := range []string{`"display_name": "${ENV_LABEL}"`, `"identifier": "${API_HOST}"`, `"${PORTAL_CALLBACK}"`,
		`"description": "Reads $${orders} and $$${more}"`} {
		if !strings.Contains(tmpl, want) {
			t.Errorf("the template lacks %s:\n%s", want, tmpl)
		}
	}
	for _, leak := range []string{"api.shop.example", "portal.shop.example", `"Shop"`, `"versions"`} {
		if strings.Contains(tmpl, leak) {
			t.Errorf("the template holds %s:\n%s", leak, tmpl)
		}
	}

	stg := h.newEnvironment(t, "Staging")
	plan := must(t, stg.run(t, invocation{}, "config", "plan", "-f", tmplFile, "--vars", staging, "--json")).JSON(t)
	must(t, stg.run(t, invocation{}, "config", "apply", plan["id"].(string), "--json"))
	for _, req := range stg.requests() {
		// The only ${ the API may see is the literal one of the
		// description, which the template wrote $${.
		if strings.Contains(strings.ReplaceAll(req, `Reads ${orders} and $${more}`, ""), "${") {
			t.Errorf("a placeholder reached the API: %s", req)
		}
	}
	stgExport := must(t, stg.run(t, invocation{}, "config", "export", "--json")).stdout
	for _, leak := range []string{"api.shop.example", "portal.shop.example", "${API_HOST}", "${ENV_LABEL}", "${PORTAL_CALLBACK}"} {
		if strings.Contains(stgExport, leak) {
			t.Errorf("staging's configuration holds %s:\n%s", leak, stgExport)
		}
	}
	prodCfg, _ := h.Export()
	swapped := strings.NewReplacer("https://api.shop.example/orders", "https://api.staging.shop.example/orders",
		"https://portal.shop.example/callback", "https://portal.staging.shop.example/callback",
		`"display_name":"Shop"`, `"display_name":"Shop (staging)"`).Replace(mustMarshal(t, prodCfg))
	if diff := cmp.Diff(decodeJSON(t, swapped), decodeJSON(t, stgExport)["config"]); diff != "" {
		t.Errorf("staging is not production with staging's values (-want +got):\n%s", diff)
	}
	// Exported from staging with staging's variables, the template is the
	// same; planned again there, it changes nothing.
	again := filepath.Join(t.TempDir(), "again.json")
	must(t, stg.run(t, invocation{}, "config", "export", "--vars", staging, "-o", again))
	if b, _ := os.ReadFile(again); string(b) != tmpl {
		t.Errorf("staging's template differs from production's:\n%s\nwant\n%s", b, tmpl)
	}
	must(t, stg.run(t, invocation{}, "config", "plan", "-f", tmplFile, "--vars", staging, "--preview", "--detailed-exitcode"))
}

func TestExportWithVarsRefusesAmbiguousValues(t *testing.T) {
	t.Parallel()
	h := setup(t)
	vars := writeFile(t, "vars.yaml", "A: Shop\nB: Shop\nC: en\n")
	r := h.run(t, "config", "export", "--vars", vars)
	wantExit(t, r, 2)
	if want := "Error: 1 value(s) of the export equal the values of several variables, so no one placeholder can stand for them:\n" +
		"  /environment_settings/display_name: \"Shop\" is the value of A and B\nGive those variables different values.\n"; r.stderr != want || r.stdout != "" {
		t.Errorf("stdout %q\nstderr %q\nwant %q", r.stdout, r.stderr, want)
	}
	wantExit(t, h.run(t, "config", "export", "--vars", vars, "--json"), 2)
}

func readAll(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(b)))
	return b, err
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExportEscapesLiteralPlaceholders: a value holding ${ is exported as
// $${, so that the export planned again changes nothing; --json writes the
// API's answer unchanged.
func TestExportEscapesLiteralPlaceholders(t *testing.T) {
	t.Parallel()
	h := setup(t)
	p := h.Plan(map[string]any{"roles": map[string]any{"support": map[string]any{"display_name": "Support", "description": "costs ${PRICE} or $${X}"}}}, false)
	h.Apply(p["id"].(string), map[string]any{})
	r := must(t, h.run(t, "config", "export", "--types", "role"))
	if !strings.Contains(r.stdout, `"description": "costs $${PRICE} or $$${X}"`) {
		t.Errorf("export:\n%s", r.stdout)
	}
	must(t, h.run(t, "config", "plan", "-f", writeFile(t, "export.json", r.stdout), "--preview", "--detailed-exitcode"))
	if raw := must(t, h.run(t, "config", "export", "--types", "role", "--json")); !strings.Contains(raw.stdout, `"costs ${PRICE} or $${X}"`) {
		t.Errorf("export --json:\n%s", raw.stdout)
	}
}
