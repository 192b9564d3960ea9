package cli_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestMarkdownOutputMatchesGoldenFile renders plans as pull-request
// comments: config plan, config show (planned, then applied), config
// rebase and config promote with --format markdown. The same plan gives
// the same bytes; no secret (the client secret resolved at the apply, the
// API keys) appears.
func TestMarkdownOutputMatchesGoldenFile(t *testing.T) {
	t.Parallel()
	p := setupPromotion(t)
	h := p.h
	h.seedLegacy(t)
	file := writeJSON(t, "keenauth.json", exampleWithDeletion())

	planned := must(t, h.run(t, "config", "plan", "-f", file, "--format", "markdown"))
	id := h.latestPlanID(t)
	shown := must(t, h.run(t, "config", "show", id, "--format", "markdown"))
	if again := must(t, h.run(t, "config", "show", id, "--format", "markdown")); again.stdout != shown.stdout {
		t.Error("the same plan rendered twice differs")
	}
	if planned.stdout != shown.stdout {
		t.Errorf("config plan and config show differ:\n%s\n---\n%s", planned.stdout, shown.stdout)
	}
	detailed := h.run(t, "config", "show", id, "--format", "markdown", "--detailed-exitcode")
	wantExit(t, detailed, 2)

	// Another apply moves the api: the plan is rebased.
	moved := h.Plan(map[string]any{"apis": map[string]any{"orders": map[string]any{"identifier": "https://api.shop.example/orders",
		"display_name": "Orders", "token_lifetime_seconds": 7200}}}, false)
	h.Apply(moved["id"].(string), map[string]any{})
	rebased := must(t, h.run(t, "config", "rebase", id, "--format", "markdown"))
	rebasedID := h.latestPlanID(t)
	applied := must(t, h.runWith(t, invocation{env: p.secretEnv}, "config", "apply", rebasedID, "--confirm-deletion", "connection/legacy",
		"--secrets-from-env", "--sp-host", "login.shop.example"))
	shownApplied := must(t, h.run(t, "config", "show", rebasedID, "--format", "markdown"))
	// Staging gains a role, which the promotion brings.
	role := writeJSON(t, "role.json", map[string]any{"roles": map[string]any{"viewer": map[string]any{"display_name": "Viewer <b>&",
		"description": "Reads ```everything```"}}})
	rolePlan := must(t, p.stg.run(t, invocation{}, "config", "plan", "-f", role, "--json")).JSON(t)
	must(t, p.stg.run(t, invocation{}, "config", "apply", rolePlan["id"].(string)))
	promoted := p.run(t, "--format", "markdown", "--preview", "--detailed-exitcode")
	wantExit(t, promoted, 2)
	runs := []result{planned, detailed, rebased, shownApplied, promoted}
	golden(t, "markdown", strings.ReplaceAll(transcript(runs...), p.stg.URL, "<staging-url>"))

	for _, r := range append(runs, applied) {
		for _, secret := range []string{canarySecret, h.Secret, p.stg.Secret} {
			if strings.Contains(r.output(), secret) {
				t.Errorf("keenauth %s printed a secret", strings.Join(r.args, " "))
			}
		}
	}
}

// TestMarkdownOfALargePlanStaysUnderTheLimit plans 400 apis with scope
// descriptions longer for each: the comment stays under 60,000 characters, leaving
// out the largest changes with a line that says how many and how to see
// them all.
func TestMarkdownOfALargePlanStaysUnderTheLimit(t *testing.T) {
	t.Parallel()
	h := setup(t)
	apis := map[string]any{}
	for i := 0; i < 400; i++ {
		apis[fmt.Sprintf("api-%03d", i)] = map[string]any{"identifier": fmt.Sprintf("https://api.shop.example/%d", i), "display_name": fmt.Sprintf("API %d", i),
			"scopes": []any{map[string]any{"value": "a", "description": strings.Repeat("a", 40+i/2)},
				map[string]any{"value": "b", "description": strings.Repeat("b", 40+i/2)},
				map[string]any{"value": "c", "description": strings.Repeat("c", 40+i/2)}},
			"token_lifetime_seconds": 3600}
	}
	r := must(t, h.run(t, "config", "plan", "-f", writeJSON(t, "big.json", map[string]any{"apis": apis}), "--format", "markdown"))
	id := h.latestPlanID(t)
	if len(r.stdout) > 60000 {
		t.Fatalf("%d bytes", len(r.stdout))
	}
	shown := strings.Count(r.stdout, "<details>")
	want := fmt.Sprintf("**%d of 400 changes left out** (the largest), to keep this comment under 60,000 characters: see every change with `keenauth config show %s`.",
		400-shown, id)
	if shown == 0 || shown == 400 || !strings.Contains(r.stdout, want) {
		t.Errorf("%d shown; want the line %q in:\n%s", shown, want, r.stdout[len(r.stdout)-1500:])
	}
	// The largest are out: api-000 (the shortest description) is in, api-399 out.
	if !strings.Contains(r.stdout, "<b>api/api-000</b>") || strings.Contains(r.stdout, "<b>api/api-399</b>") {
		t.Error("the smallest changes were not the ones kept")
	}
	if !strings.HasPrefix(r.stdout, "### Keenauth plan `"+id+"`: 400 to create, 0 to update, 0 to delete, 0 unchanged\n") {
		t.Errorf("first line: %q", strings.SplitN(r.stdout, "\n", 2)[0])
	}
}

func TestFormatFlag(t *testing.T) {
	t.Parallel()
	h := setup(t)
	id := h.Plan(map[string]any{"roles": map[string]any{"support": map[string]any{"display_name": "Support"}}}, false)["id"].(string)
	asJSON := must(t, h.run(t, "config", "show", id, "--json"))
	if r := must(t, h.run(t, "config", "show", id, "--format", "json")); r.stdout != asJSON.stdout {
		t.Errorf("--format json differs from --json:\n%s\n%s", r.stdout, asJSON.stdout)
	}
	must(t, h.run(t, "config", "show", id, "--format", "json", "--json"))
	if r := must(t, h.run(t, "config", "show", id, "--format", "text")); !strings.HasPrefix(r.stdout, "Plan "+id) {
		t.Errorf("--format text:\n%s", r.stdout)
	}
	for _, args := range [][]string{
		{"config", "show", id, "--format", "markdown", "--json"},
		{"config", "show", id, "--format", "text", "--json"},
		{"config", "show", id, "--format", "yaml"},
		{"config", "plan", "-f", "x.json", "--format", "md"},
		{"config", "rebase", id, "--format", "MARKDOWN"},
	} {
		r := h.run(t, args...)
		wantExit(t, r, 2)
		if r.stdout != "" || !strings.Contains(r.stderr, "--format") {
			t.Errorf("keenauth %v: stdout %q stderr %q", args, r.stdout, r.stderr)
		}
	}
	wantExit(t, h.run(t, "config", "show", id, "--format", "yaml", "--detailed-exitcode"), 1)
}
