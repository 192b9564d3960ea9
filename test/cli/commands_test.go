package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
)

// TestWhoamiVersionAndConnectionTestOutput checks the human output of
// whoami, version and connections test with golden files, and their
// --json and exit statuses.
func TestWhoamiVersionAndConnectionTestOutput(t *testing.T) {
	t.Parallel()
	h := setup(t)
	rec := h.recorder(t)
	viaRec := invocation{env: map[string]string{"KEENAUTH_API_URL": rec.URL}}
	few := h.Key(config.PermConfigRead, "connections:write", "apis:read")

	whoami := must(t, h.runWith(t, invocation{env: map[string]string{"KEENAUTH_SECRET_KEY": few}}, "whoami"))
	none := must(t, h.runWith(t, invocation{env: map[string]string{"KEENAUTH_SECRET_KEY": h.Key()}}, "whoami"))
	refused := h.runWith(t, invocation{env: map[string]string{"KEENAUTH_SECRET_KEY": "ksk_nope"}}, "whoami")
	wantExit(t, refused, 1)
	// The harness's URL changes from run to run.
	golden(t, "whoami", strings.ReplaceAll(transcript(whoami, none, refused), h.URL, "<api>"))
	if strings.Contains(whoami.output(), few) {
		t.Error("whoami printed the secret")
	}
	asJSON := must(t, h.runWith(t, viaRec, "whoami", "--json"))
	if want := string(rec.body["GET /v1/api-keys/current"]) + "\n"; asJSON.stdout != want {
		t.Errorf("whoami --json printed\n%s\nthe API answered\n%s", asJSON.stdout, want)
	}

	// version needs no key and sends nothing.
	version := must(t, runCLI(t, map[string]string{"KEENAUTH_API_URL": closedURL(t)}, invocation{}, "version"))
	goVersion := regexp.MustCompile(`\bgo1\.\d+(\.\d+)?\S*`)
	golden(t, "version", goVersion.ReplaceAllString(transcript(version), "<go>"))
	v := must(t, runCLI(t, map[string]string{}, invocation{}, "version", "--json")).JSON(t)
	if v["version"] != "devel" || v["commit"] != "unknown" || !goVersion.MatchString(v["go"].(string)) {
		t.Errorf("version --json of a test binary: %v", v)
	}

	// An enterprise connection with confirmed material, tested.
	id := h.Plan(exampleNeedingSecret(), false)["id"].(string)
	applied := h.Apply(id, map[string]any{"resolved_secrets": map[string]any{acmeSecret: "s3cret"}, "sp_host": "login.shop.example"})
	conID := changeOf(t, applied, "connection", "acme-sso")["resource_id"].(string)
	succeeded := must(t, h.run(t, "connections", "test", "acme-sso"))
	h.Fed.TestResult(h.EnvID, conID, false, "the issuer did not answer")
	failed := h.run(t, "connections", "test", "acme-sso")
	wantExit(t, failed, 1)
	notTestable := h.run(t, "connections", "test", "github")
	wantExit(t, notTestable, 1)
	unknown := h.run(t, "connections", "test", "nope")
	wantExit(t, unknown, 1)
	golden(t, "connections", transcript(succeeded, failed, notTestable, unknown))

	failedJSON := h.runWith(t, viaRec, "connections", "test", "acme-sso", "--json")
	wantExit(t, failedJSON, 1)
	if want := string(rec.body["POST /v1/connections/acme-sso:test"]) + "\n"; failedJSON.stdout != want || failedJSON.stderr != "" {
		t.Errorf("connections test --json printed\n%s%s\nthe API answered\n%s", failedJSON.stdout, failedJSON.stderr, want)
	}
	if got := failedJSON.JSON(t); got["status"] != "failed" || got["reason"] != "the issuer did not answer" {
		t.Errorf("--json: %v", got)
	}
}
