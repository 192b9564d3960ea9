package cli_test

import (
	"fmt"
	"strings"
	"testing"
)

// apisDocument is n apis; the one named changed gets another lifetime.
func apisDocument(n int, changed string) map[string]any {
	apis := map[string]any{}
	for i := range n {
		key := fmt.Sprintf("api-%02d", i)
		lifetime := 3600
		if key == changed {
			lifetime = 7200
		}
		apis[key] = map[string]any{"identifier": "https://api.shop.example/" + key, "display_name": "API " + key,
			"scopes": []any{}, "token_lifetime_seconds": lifetime}
	}
	return map[string]any{"apis": apis}
}

// TestUnchangedResourcesAreOneCountLineUnlessShowUnchanged plans 12 apis
// of which one changes: the diff shows that one and counts the others,
// and --show-unchanged lists them all (golden file unchanged).
func TestUnchangedResourcesAreOneCountLineUnlessShowUnchanged(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.Apply(h.Plan(apisDocument(12, ""), false)["id"].(string), map[string]any{})

	doc := writeJSON(t, "apis.json", apisDocument(12, "api-07"))
	collapsed := must(t, h.run(t, "config", "plan", "-f", doc))
	id := h.latestPlanID(t)
	listed := must(t, h.run(t, "config", "show", id, "--show-unchanged"))
	golden(t, "unchanged", transcript(collapsed, listed))
	if n := strings.Count(collapsed.stdout, "= no_op"); n != 0 {
		t.Errorf("the collapsed plan lists %d no_op lines", n)
	}
	if n := strings.Count(listed.stdout, "= no_op"); n != 11 {
		t.Errorf("--show-unchanged lists %d no_op lines, want 11", n)
	}

	// Nothing but no_op: the count and "No changes".
	same := must(t, h.run(t, "config", "plan", "-f", writeJSON(t, "same.json", apisDocument(12, ""))))
	for _, want := range []string{"  = 12 unchanged (not listed; --show-unchanged lists them)\n", "No changes: the configuration already matches the document."} {
		if !strings.Contains(same.stdout, want) {
			t.Errorf("a plan without changes lacks %q:\n%s", want, same.stdout)
		}
	}
}

func TestDetailedExitcodeSaysWhetherThePlanChangesAnything(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.Apply(h.Plan(apisDocument(3, ""), false)["id"].(string), map[string]any{})
	changes := writeJSON(t, "changes.json", apisDocument(3, "api-01"))
	same := writeJSON(t, "same.json", apisDocument(3, ""))
	invalid := writeJSON(t, "invalid.json", map[string]any{"apis": map[string]any{"x": map[string]any{"display_name": ""}}})

	withChanges := h.run(t, "config", "plan", "-f", changes, "--detailed-exitcode")
	wantExit(t, withChanges, 2)
	changedID := h.latestPlanID(t)
	unchanged := h.run(t, "config", "plan", "-f", same, "--detailed-exitcode")
	wantExit(t, unchanged, 0)
	unchangedID := h.latestPlanID(t)
	if !strings.Contains(withChanges.stdout, "~ update  api/api-01") || withChanges.stderr != "" {
		t.Errorf("a plan with changes still prints them:\n%s%s", withChanges.stdout, withChanges.stderr)
	}

	for _, c := range []struct {
		name string
		inv  invocation
		args []string
		code int
	}{
		{"show, changes", invocation{}, []string{"config", "show", changedID, "--detailed-exitcode"}, 2},
		{"show, no changes", invocation{}, []string{"config", "show", unchangedID, "--detailed-exitcode"}, 0},
		{"plan --json, changes", invocation{}, []string{"config", "plan", "-f", changes, "--json", "--detailed-exitcode"}, 2},
		{"show --json, no changes", invocation{}, []string{"--json", "config", "show", "--detailed-exitcode", unchangedID}, 0},
		{"without the flag, changes exit 0", invocation{}, []string{"config", "plan", "-f", changes}, 0},
		// Every failure is 1, never 2.
		{"422", invocation{}, []string{"config", "plan", "-f", invalid, "--detailed-exitcode"}, 1},
		{"404", invocation{}, []string{"config", "show", "cfgp_01m4qpqtywfs7930tb6kqn5rc5", "--detailed-exitcode"}, 1},
		{"usage: no -f", invocation{}, []string{"config", "plan", "--detailed-exitcode"}, 1},
		{"usage: no plan id", invocation{}, []string{"config", "show", "--detailed-exitcode"}, 1},
		{"usage: unknown flag", invocation{}, []string{"config", "plan", "--detailed-exitcode", "--bogus"}, 1},
		{"usage: unreadable file", invocation{}, []string{"config", "plan", "-f", "/nonexistent/doc.json", "--detailed-exitcode"}, 1},
		{"no API key", invocation{env: map[string]string{"KEENAUTH_SECRET_KEY": ""}}, []string{"config", "plan", "-f", changes, "--detailed-exitcode"}, 1},
		{"unreachable", invocation{env: map[string]string{"KEENAUTH_API_URL": closedURL(t)}}, []string{"config", "show", changedID, "--detailed-exitcode", "--retry-for", "0"}, 1},
		{"usage without the flag stays 2", invocation{}, []string{"config", "plan"}, 2},
	} {
		r := h.runWith(t, c.inv, c.args...)
		if r.code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.name, r.code, c.code, r.stdout, r.stderr)
		}
		if strings.Contains(strings.Join(c.args, " "), "--json") && r.code != 1 {
			r.JSON(t)
		}
	}
}
