package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/config"
)

func TestExitCodes(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	settings := func(hours int) string {
		return writeJSON(t, "settings.json", map[string]any{"environment_settings": map[string]any{
			"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": hours}})
	}
	planOf := func(file string) string {
		return must(t, h.run(t, "config", "plan", "-f", file, "--json")).JSON(t)["id"].(string)
	}
	stale := planOf(settings(24))
	fresh := planOf(settings(48))
	must(t, h.run(t, "config", "apply", fresh))
	applied := fresh
	deleting := planOf(writeJSON(t, "del.json", map[string]any{"connections": map[string]any{"legacy": nil}}))
	duplicate := planOf(writeJSON(t, "dup.json", map[string]any{"connections": map[string]any{"legacy-2": legacySpec()}}))
	invalid := writeJSON(t, "invalid.json", map[string]any{"connections": map[string]any{"acme": map[string]any{
		"type": "enterprise", "display_name": "", "active": false,
		"oidc": map[string]any{"issuer": "http://idp.example", "client_id": "abc", "scopes": []string{"email"}}}}})
	readOnly := h.Key(config.PermConfigRead, "connections:read")

	cases := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want []string // in stderr
	}{
		{"no -f", nil, []string{"config", "plan"}, 2, []string{"Error: -f FILE is required (- reads standard input).\n", "Run 'keenauth config plan --help' for usage."}},
		{"no plan id", nil, []string{"config", "apply"}, 2, []string{"keenauth config apply needs PLAN"}},
		{"unknown flag", nil, []string{"config", "show", "x", "--bogus"}, 2, []string{"unknown flag: --bogus"}},
		{"unknown command", nil, []string{"plan"}, 2, []string{`unknown command "plan" for "keenauth"`}},
		{"unknown subcommand", nil, []string{"revisions", "delete"}, 2, []string{`unknown command "delete" for "keenauth revisions"`}},
		{"limit out of range", nil, []string{"plans", "list", "--limit", "0"}, 2, []string{"--limit must be from 1 to 100"}},
		{"no API key", map[string]string{"KEENAUTH_SECRET_KEY": ""}, []string{"plans", "list"}, 2, []string{"no API key: set KEENAUTH_SECRET_KEY"}},
		{"not an http URL", map[string]string{"KEENAUTH_API_URL": "ftp://example.com"}, []string{"plans", "list"}, 2, []string{`the API URL "ftp://example.com" is not an http(s) URL`}},

		{"unknown key", map[string]string{"KEENAUTH_SECRET_KEY": "ksk_nope"}, []string{"plans", "list"}, 1,
			[]string{"Error: Unauthenticated: a valid API key is required.\n", "(HTTP 401 unauthenticated", "Check the API key in KEENAUTH_SECRET_KEY"}},
		{"missing permission", map[string]string{"KEENAUTH_SECRET_KEY": readOnly}, []string{"config", "apply", deleting, "--confirm-deletion", "connection/legacy"}, 1,
			[]string{"Insufficient permissions", "required permissions: config:write, connections:read, connections:write", "(HTTP 403 insufficient_permissions"}},
		{"no such plan", nil, []string{"config", "show", "cfgp_00000000000000000000000000"}, 1, []string{"Error: Not found: no such config plan.\n", "(HTTP 404 not_found"}},
		{"invalid document", nil, []string{"config", "plan", "-f", invalid}, 1,
			[]string{"Error: Validation failed: ", "  /config/connections/acme/display_name: ", "  /config/connections/acme/oidc/issuer: ", "  /config/connections/acme/oidc/scopes: ", "(HTTP 422 validation_failed"}},
		{"deletion not confirmed", nil, []string{"config", "apply", deleting}, 1,
			[]string{"unconfirmed deletions: connection/legacy", "Confirm the deletions to apply: --confirm-deletion connection/legacy"}},

		{"applied already", nil, []string{"config", "apply", applied}, 3, []string{"plan status: applied", "(HTTP 409 config_plan_not_applicable"}},
		{"configuration changed", nil, []string{"config", "apply", stale}, 3,
			[]string{"Error: Configuration changed: the configuration changed after the plan was made; create a new plan.\n",
				"  /changes/0: version_changed", "(HTTP 409 config_conflict", "keenauth config rebase " + stale + " (then review and apply the new plan)"}},
		{"unique value taken", nil, []string{"config", "apply", duplicate}, 3,
			[]string{"Conflict: another resource already uses a unique value of this plan.", "  /changes/0/spec/display_name: duplicate", "(HTTP 409 conflict"}},
	}
	for _, c := range cases {
		r := h.runWith(t, invocation{env: c.env}, c.args...)
		if r.code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, r.code, c.code, r.stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, r.stderr)
			}
		}
		if strings.Contains(r.output(), `{"`) {
			t.Errorf("%s: raw JSON without --json:\n%s", c.name, r.output())
		}
		if c.code != 0 && strings.Contains(r.stdout, "Error") {
			t.Errorf("%s: the error went to stdout", c.name)
		}
	}
}

func TestExpiredPlanExits3(t *testing.T) {
	t.Parallel()
	h := setup(t)
	id := h.Plan(map[string]any{"apis": exampleNeedingSecret()["apis"]}, false)["id"].(string)
	h.Clock.Advance(25 * time.Hour)
	r := h.run(t, "config", "apply", id)
	wantExit(t, r, 3)
	for _, w := range []string{"Error: Config plan expired: the plan's validity is over; create a new plan.\n", "(HTTP 410 config_plan_expired",
		"Plan the same changes against the configuration as it is now: keenauth config rebase " + id} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	shown := must(t, h.run(t, "config", "show", id))
	if !strings.Contains(shown.stdout, "This plan is expired and can no longer be applied. To plan the same changes against the configuration as it is now:\n  keenauth config rebase "+id+"\n") ||
		strings.Contains(shown.stdout, "Already rebased") {
		t.Errorf("show of an expired plan:\n%s", shown.stdout)
	}
	// Once rebased, show names the plan that replaced it, and no longer
	// offers the rebase.
	rebased := must(t, h.run(t, "config", "rebase", id, "--json")).JSON(t)["id"].(string)
	shown = must(t, h.run(t, "config", "show", id))
	if !strings.Contains(shown.stdout, "\nAlready rebased as "+rebased+"; see it with: keenauth config show "+rebased+"\n") ||
		strings.Contains(shown.stdout, "config rebase") {
		t.Errorf("show of a rebased plan:\n%s", shown.stdout)
	}
	// --json prints the plan unchanged.
	if js := must(t, h.run(t, "config", "show", id, "--json")); strings.Contains(js.stdout, "Already") {
		t.Errorf("show --json:\n%s", js.stdout)
	}
}
