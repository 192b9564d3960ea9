package cli_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/test/apitest"
)

const canarySecret = "canary-client-secret-7f3a9e"

// stagingDocument is the §4 document with staging's values.
func stagingDocument() map[string]any {
	doc := apitest.ExampleDocument()
	delete(doc["connections"].(map[string]any), "legacy")
	doc["environment_settings"].(map[string]any)["display_name"] = "Shop (staging)"
	doc["apis"].(map[string]any)["orders"].(map[string]any)["identifier"] = "https://api.staging.shop.example/orders"
	doc["applications"].(map[string]any)["portal"].(map[string]any)["callback_urls"] = []any{"https://portal.staging.shop.example/callback"}
	return doc
}

const stagingVars = `ENV_NAME: Shop (staging)
ORDERS_API: https://api.staging.shop.example/orders
PORTAL_CALLBACK: https://portal.staging.shop.example/callback
`

const productionVars = `{"ENV_NAME": "Shop", "ORDERS_API": "https://api.shop.example/orders",
 "PORTAL_CALLBACK": "https://portal.shop.example/callback"}`

// promotion is a staging environment configured with stagingDocument (its
// OIDC client secret the canary) and the harness's environment as
// production, both behind recording URLs.
type promotion struct {
	h                *harness
	stg, prod        *environment
	fromVars, toVars string
	secretEnv        map[string]string
	promote          []string
}

func setupPromotion(t *testing.T) *promotion {
	t.Helper()
	h := setup(t)
	p := &promotion{h: h, stg: h.newEnvironment(t, "Staging"), prod: h.target(t),
		fromVars: writeFile(t, "staging.yaml", stagingVars), toVars: writeFile(t, "production.json", productionVars)}
	p.secretEnv = map[string]string{"STAGING_KEY": p.stg.Secret, "KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET": canarySecret}
	planned := must(t, p.stg.run(t, invocation{}, "config", "plan", "-f", writeJSON(t, "staging.json", stagingDocument()), "--json")).JSON(t)
	must(t, p.stg.run(t, invocation{env: p.secretEnv}, "config", "apply", planned["id"].(string), "--secrets-from-env", "--sp-host", "login.staging.shop.example"))
	p.promote = []string{"config", "promote", "--from-url", p.stg.URL, "--from-key-env", "STAGING_KEY", "--from-vars", p.fromVars, "--vars", p.toVars}
	return p
}

func (p *promotion) run(t *testing.T, extra ...string) result {
	t.Helper()
	return p.prod.run(t, invocation{env: p.secretEnv}, append(append([]string(nil), p.promote...), extra...)...)
}

// TestPromotePlansTheSourceWithTheTargetsValues promotes staging to
// production: the plan creates staging's resources with production's
// values, lists the secret production's apply needs without copying
// staging's, sends no versions and no placeholder; once applied, the same
// promotion plans only no_op changes (exit 0 with --detailed-exitcode).
func TestPromotePlansTheSourceWithTheTargetsValues(t *testing.T) {
	t.Parallel()
	p := setupPromotion(t)
	r := p.run(t, "--json", "--detailed-exitcode")
	wantExit(t, r, 2)
	pl := r.JSON(t)
	if diff := cmp.Diff(map[string]any{"create": 4.0, "update": 1.0, "delete": 0.0, "no_op": 3.0}, pl["summary"]); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET"}, pl["required_secrets"]); diff != "" {
		t.Errorf("required secrets (-want +got):\n%s", diff)
	}
	specs := map[string]any{}
	for _, c := range pl["changes"].([]any) {
		c := c.(map[string]any)
		specs[c["kind"].(string)+"/"+c["key"].(string)] = c["spec"]
	}
	if got := specs["api/orders"].(map[string]any)["identifier"]; got != "https://api.shop.example/orders" {
		t.Errorf("api/orders identifier = %v", got)
	}
	if got := specs["application/portal"].(map[string]any)["callback_urls"]; !cmp.Equal(got, []any{"https://portal.shop.example/callback"}) {
		t.Errorf("application/portal callback_urls = %v", got)
	}
	if got := specs["environment_settings/default"].(map[string]any)["display_name"]; got != "Shop" {
		t.Errorf("display_name = %v", got)
	}

	// What each side received: staging one export with its own key;
	// production a plan without versions, placeholders, staging's values,
	// staging's key or the secret.
	stgReqs := p.stg.requests()
	if len(stgReqs) != 4 || !strings.HasPrefix(stgReqs[3], "GET /v1/config\nBearer "+p.stg.Secret+"\n") {
		t.Errorf("staging received %q, want the plan, its apply (2 requests) and one export", stgReqs)
	}
	prodReqs := p.prod.requests()
	if len(prodReqs) != 1 || !strings.HasPrefix(prodReqs[0], "POST /v1/config-plans\nBearer "+p.h.Secret+"\n") {
		t.Fatalf("production received %q, want one plan creation", prodReqs)
	}
	for _, leak := range []string{`"versions"`, "${", "staging", p.stg.Secret, canarySecret} {
		if strings.Contains(prodReqs[0], leak) {
			t.Errorf("the plan sent to production holds %q:\n%s", leak, prodReqs[0])
		}
	}

	// Applied (production's own secret), the same promotion changes nothing.
	prodEnv := invocation{env: map[string]string{"KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET": "production-secret"}}
	must(t, p.prod.run(t, prodEnv, "config", "apply", pl["id"].(string), "--secrets-from-env", "--sp-host", "login.shop.example"))
	again := must(t, p.run(t, "--detailed-exitcode"))
	if !strings.Contains(again.stdout, "Summary: 0 to create, 0 to update, 0 to delete, 8 unchanged.") ||
		!strings.Contains(again.stdout, "No changes: the configuration already matches the document.") {
		t.Errorf("the second promotion:\n%s", again.stdout)
	}
	for _, r := range []result{r, again} {
		for _, secret := range []string{canarySecret, p.stg.Secret, "production-secret"} {
			if strings.Contains(r.output(), secret) {
				t.Errorf("keenauth %v printed a secret", r.args)
			}
		}
	}
}

func TestPromoteTypesPruneAndPreview(t *testing.T) {
	t.Parallel()
	p := setupPromotion(t)
	extra := p.h.Plan(map[string]any{"roles": map[string]any{"extra": map[string]any{"display_name": "Extra"}}}, false)
	p.h.Apply(extra["id"].(string), map[string]any{})
	plansBefore := len(must(t, p.h.run(t, "plans", "list", "--json")).JSON(t)["data"].([]any))

	pl := must(t, p.run(t, "--types", "api,role", "--prune", "--preview", "--json")).JSON(t)
	if pl["status"] != "preview" || !cmp.Equal(pl["types"], []any{"api", "role"}) || pl["prune"] != true {
		t.Errorf("status %v, types %v, prune %v", pl["status"], pl["types"], pl["prune"])
	}
	if diff := cmp.Diff(map[string]any{"create": 1.0, "update": 0.0, "delete": 1.0, "no_op": 0.0}, pl["summary"]); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if got := p.stg.requests(); !strings.HasPrefix(got[len(got)-1], "GET /v1/config?types=api%2Crole\n") {
		t.Errorf("the export asked: %q", got[len(got)-1])
	}
	if after := len(must(t, p.h.run(t, "plans", "list", "--json")).JSON(t)["data"].([]any)); after != plansBefore {
		t.Errorf("the preview stored %d plans", after-plansBefore)
	}

	// A variable's value inside a longer string is promoted as it is,
	// with a warning: only whole values become placeholders.
	hostOnly := writeFile(t, "host.yaml", "API_HOST: api.staging.shop.example\n")
	r := must(t, p.prod.run(t, invocation{env: p.secretEnv}, "config", "promote", "--from-url", p.stg.URL, "--from-key-env", "STAGING_KEY",
		"--from-vars", hostOnly, "--var", "API_HOST=api.shop.example", "--types", "api", "--preview"))
	want := "Warning: /apis/orders/identifier holds the value of API_HOST inside a longer string: only whole values become placeholders, so it is kept as it is.\n" +
		"Warning: variable API_HOST (from " + hostOnly + ") matches no value of the source environment.\n" +
		"Warning: variable API_HOST (from --var) is used by no placeholder of the source environment's configuration.\n"
	if r.stderr != want {
		t.Errorf("stderr %q\nwant   %q", r.stderr, want)
	}
}

func TestPromoteRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	p := setupPromotion(t)
	stgBefore := len(p.stg.requests())
	partial := writeFile(t, "partial.yaml", "ENV_NAME: Shop\n")
	ambiguous := writeFile(t, "ambiguous.yaml", stagingVars+"OTHER_NAME: Shop (staging)\n")
	base := []string{"config", "promote", "--from-url", p.stg.URL}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		exit int
		want string
	}{
		{"key variable unset", map[string]string{}, append(base, "--from-key-env", "STAGING_KEY"), 2,
			"Error: the environment variable STAGING_KEY, which --from-key-env names, is not set or empty: it must hold the source environment's API key.\n"},
		{"key variable empty", map[string]string{"STAGING_KEY": ""}, append(base, "--from-key-env", "STAGING_KEY", "--detailed-exitcode"), 1,
			"Error: the environment variable STAGING_KEY, which --from-key-env names, is not set or empty"},
		{"a key instead of a name", nil, append(base, "--from-key-env", p.stg.Secret), 2,
			"Error: --from-key-env takes the name of the environment variable that holds the source's API key, not the key itself"},
		{"no key flag", nil, append(base, "--from-key", p.stg.Secret), 2, "Error: unknown flag: --from-key"},
		{"no --from-key-env", nil, base, 2, "Error: --from-key-env VAR is required"},
		{"no --from-url", nil, []string{"config", "promote", "--from-key-env", "STAGING_KEY"}, 2, "Error: --from-url URL is required"},
		{"not a URL", nil, []string{"config", "promote", "--from-url", "staging", "--from-key-env", "STAGING_KEY"}, 2, `Error: --from-url "staging" is not an http(s) URL`},
		{"bad format", nil, append(base, "--from-key-env", "STAGING_KEY", "--format", "html"), 2, `Error: --format "html": give text, json or markdown.`},
	} {
		env := tc.env
		if env == nil {
			env = p.secretEnv
		}
		r := p.prod.run(t, invocation{env: env}, tc.args...)
		if r.code != tc.exit || !strings.HasPrefix(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%s: exit %d (want %d)\nstdout %q\nstderr %q\nwant   %q", tc.name, r.code, tc.exit, r.stdout, r.stderr, tc.want)
		}
		if strings.Contains(r.output(), p.stg.Secret) {
			t.Errorf("%s: the source key was printed", tc.name)
		}
	}
	if got := p.stg.requests(); len(got) != stgBefore {
		t.Errorf("staging received %q", got[stgBefore:])
	}
	// Unresolved placeholders and ambiguous values are found after the
	// export, and nothing is planned.
	r := p.prod.run(t, invocation{env: p.secretEnv}, "config", "promote", "--from-url", p.stg.URL, "--from-key-env", "STAGING_KEY",
		"--from-vars", p.fromVars, "--vars", partial)
	wantExit(t, r, 2)
	want := "Error: 2 placeholder(s) of the source environment's configuration cannot be replaced, so nothing was sent:\n" +
		"  /apis/orders/identifier: ${ORDERS_API} has no value\n"
	if !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, "/applications/portal/callback_urls/0: ${PORTAL_CALLBACK} has no value") {
		t.Errorf("stderr %q\nwant %q…", r.stderr, want)
	}
	r = p.prod.run(t, invocation{env: p.secretEnv}, "config", "promote", "--from-url", p.stg.URL, "--from-key-env", "STAGING_KEY",
		"--from-vars", ambiguous, "--vars", p.toVars, "--detailed-exitcode")
	wantExit(t, r, 1)
	if !strings.Contains(r.stderr, `/environment_settings/display_name: "Shop (staging)" is the value of ENV_NAME and OTHER_NAME`) {
		t.Errorf("stderr %q", r.stderr)
	}
	if got := p.prod.requests(); len(got) != 0 {
		t.Errorf("production received %q", got)
	}
	// A source that refuses the key: its answer, exit 1.
	r = p.prod.run(t, invocation{env: map[string]string{"STAGING_KEY": "ksk_wrong"}}, "config", "promote", "--from-url", p.stg.URL, "--from-key-env", "STAGING_KEY")
	wantExit(t, r, 1)
	if !strings.Contains(r.stderr, "the export of the source environment") || !strings.Contains(r.stderr, "unauthenticated") {
		t.Errorf("stderr %q", r.stderr)
	}
}
