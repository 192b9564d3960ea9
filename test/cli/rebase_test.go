package cli_test

import (
	"strings"
	"testing"
)

// TestRebaseAndRevisionDiffGolden: config rebase prints what moved since the
// plan was planned (both versions and the diff, the types other changes
// touched) before the new plan, and refuses an applied plan; revisions diff
// prints each resource of a revision beside today's as old → new.
func TestRebaseAndRevisionDiffGolden(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.Apply(h.Plan(diffBase(), false)["id"].(string), map[string]any{})

	doc := diffBase()
	doc["apis"].(map[string]any)["orders"].(map[string]any)["display_name"] = "Orders v2"
	doc["applications"].(map[string]any)["admin"].(map[string]any)["display_name"] = "Admin 2"
	src := h.Plan(doc, false)["id"].(string)

	// Since: the orders api gets another token lifetime, and another
	// application is created.
	since := diffBase()
	since["apis"].(map[string]any)["orders"].(map[string]any)["token_lifetime_seconds"] = 7200
	since["applications"].(map[string]any)["extra"] = map[string]any{"display_name": "Extra", "type": "spa"}
	applied := h.Apply(h.Plan(since, false)["id"].(string), map[string]any{})

	rebased := must(t, h.run(t, "config", "rebase", src))
	refused := h.run(t, "config", "rebase", applied["id"].(string))
	wantExit(t, refused, 3)
	golden(t, "rebase", transcript(rebased, refused))
	for _, want := range []string{
		"Rebased from " + src + ". Moved since it was planned (then → now):",
		"api/orders  (version 1 → version 2)",
		"~ token_lifetime_seconds: 3600 → 7200",
		"application  other resources of this type changed (type_changed)",
	} {
		if !strings.Contains(rebased.stdout, want) {
			t.Errorf("the rebase lacks %q:\n%s", want, rebased.stdout)
		}
	}

	rev := applied["revision_id"].(string)
	diff := must(t, h.run(t, "revisions", "diff", rev))
	golden(t, "revisiondiff", transcript(diff))
	for _, want := range []string{
		"api/orders  (version 1 before the apply, version 2 now)",
		"~ token_lifetime_seconds: 7200 → 3600",
		"application/extra  (did not exist before the apply, version 1 now)",
		`- display_name: "Extra"`,
	} {
		if !strings.Contains(diff.stdout, want) {
			t.Errorf("the revision diff lacks %q:\n%s", want, diff.stdout)
		}
	}
	asJSON := must(t, h.run(t, "revisions", "diff", rev, "--json")).JSON(t)
	if asJSON["object"] != "config_revision_diff" || asJSON["revision_id"] != rev {
		t.Errorf("revisions diff --json: %v", asJSON)
	}
	rebasedJSON := must(t, h.run(t, "config", "rebase", src, "--json")).JSON(t)
	if rebasedJSON["rebased_from"] != src {
		t.Errorf("config rebase --json: rebased_from %v", rebasedJSON["rebased_from"])
	}
}
