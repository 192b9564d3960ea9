package cli_test

import (
	"strings"
	"testing"
)

// TestApplyRefusalsNameTheFlagsThatCausedThem: a pointer into the apply's
// body is reported as the flag that wrote it (golden file flags); --json
// still prints the API's problem unchanged.
func TestApplyRefusalsNameTheFlagsThatCausedThem(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	withSecret := h.Plan(exampleWithDeletion(), false)["id"].(string)
	noSecret := h.Plan(noSecretDocument(), false)["id"].(string)
	secretEnv := invocation{env: map[string]string{acmeSecret: "golden-secret-4711"}}

	typo := h.run(t, "config", "apply", noSecret, "--confirm-deletion", "connection/legacy", "--confirm-deletion", "connection/lgacy",
		"--confirm-deletion", "legacy", "--sp-host", "login.shop.example", "--idempotency-key", "flags-1")
	wantExit(t, typo, 1)
	hostAndSecret := h.runWith(t, secretEnv, "config", "apply", withSecret, "--confirm-deletion", "connection/legacy",
		"--sp-host", "Login.Shop.Example:443", "--idempotency-key", "flags-2")
	wantExit(t, hostAndSecret, 1)
	golden(t, "flags", transcript(typo, hostAndSecret))
	if strings.Contains(typo.stderr+hostAndSecret.stderr, "/confirm_deletions") || strings.Contains(typo.stderr+hostAndSecret.stderr, "/sp_host") {
		t.Errorf("a body pointer in the human output:\n%s%s", typo.stderr, hostAndSecret.stderr)
	}

	asJSON := h.run(t, "config", "apply", noSecret, "--confirm-deletion", "connection/lgacy", "--json", "--idempotency-key", "flags-3")
	wantExit(t, asJSON, 1)
	if p := asJSON.JSON(t); !strings.Contains(asJSON.stdout, `"/confirm_deletions/0"`) || p["code"] != "validation_failed" {
		t.Errorf("--json does not print the problem unchanged: %s", asJSON.stdout)
	}
	if !strings.Contains(asJSON.stderr, "  --confirm-deletion connection/lgacy: not a deletion in this plan (not_a_deletion)\n") {
		t.Errorf("stderr of --json: %s", asJSON.stderr)
	}
}

func TestLogsRefusesAnUnknownTypeNamingTheKnownOnes(t *testing.T) {
	t.Parallel()
	h := setup(t)
	fake := newFakeAPI(t, nil)
	r := runAgainst(t, fake.URL, invocation{}, "logs", "--type", "conection.deleted")
	wantExit(t, r, 2)
	for _, want := range []string{`Error: unknown --type "conection.deleted": the management log's types are config.applied and <kind>.created, <kind>.updated or <kind>.deleted, where <kind> is one of api, connection, `,
		"Run 'keenauth logs --help' for usage."} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if got := fake.requests(); len(got) != 0 {
		t.Errorf("an unknown --type was sent: %q", got)
	}
	for _, typ := range []string{"config.applied", "connection.deleted", "environment_settings.updated"} {
		if r := must(t, h.run(t, "logs", "--type", typ)); r.stdout != "No entries.\n" {
			t.Errorf("logs --type %s: %q", typ, r.stdout)
		}
	}
	r = must(t, h.run(t, "__complete", "logs", "--type", "connection."))
	if !strings.Contains(r.stdout, "connection.created\nconnection.updated\nconnection.deleted\n") {
		t.Errorf("completion of --type:\n%s", r.stdout)
	}
}
