package cli_test

import (
	"strings"
	"testing"
)

// TestHumanOutputMatchesGoldenFiles walks the life of a plan with the
// human output of every command (ids, times and generated keys masked):
// plan, show, the refusals of an incomplete apply, the apply, lists,
// revisions, a restore and the management log.
func TestHumanOutputMatchesGoldenFiles(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	const secret = "golden-secret-value-4711"
	secretEnv := invocation{env: map[string]string{"KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET": secret}}
	var all []result

	doc := writeJSON(t, "keenauth.json", exampleWithDeletion())
	planned := must(t, h.run(t, "config", "plan", "-f", doc))
	planID := h.latestPlanID(t)
	shown := must(t, h.run(t, "config", "show", planID))
	golden(t, "plan", transcript(planned, shown))
	all = append(all, planned, shown)

	incomplete := h.run(t, "config", "apply", planID)
	wantExit(t, incomplete, 1)
	unconfirmed := h.runWith(t, secretEnv, "config", "apply", planID, "--secrets-from-env", "--sp-host", "login.shop.example")
	wantExit(t, unconfirmed, 1)
	applied := must(t, h.runWith(t, secretEnv, "config", "apply", planID, "--confirm-deletion", "connection/legacy",
		"--secrets-from-env", "--sp-host", "login.shop.example"))
	again := h.run(t, "config", "apply", planID)
	wantExit(t, again, 3)
	shownApplied := must(t, h.run(t, "config", "show", planID))
	golden(t, "apply", transcript(incomplete, unconfirmed, applied, again, shownApplied))
	all = append(all, incomplete, unconfirmed, applied, again, shownApplied)

	plans := must(t, h.run(t, "plans", "list"))
	planned2 := must(t, h.run(t, "plans", "list", "--status", "planned"))
	revs := must(t, h.run(t, "revisions", "list"))
	revID := h.latestRevisionID(t)
	rev := must(t, h.run(t, "revisions", "show", revID))
	restore := must(t, h.run(t, "revisions", "restore", revID))
	logs := must(t, h.run(t, "logs", "--limit", "4"))
	golden(t, "lists", transcript(plans, planned2, revs, rev, restore, logs))
	all = append(all, plans, planned2, revs, rev, restore, logs)

	for _, r := range all {
		if strings.Contains(r.output(), secret) {
			t.Errorf("keenauth %s printed the secret", strings.Join(r.args, " "))
		}
		if strings.Contains(r.output(), "\x1b[") {
			t.Errorf("keenauth %s printed colour to a non-terminal", strings.Join(r.args, " "))
		}
	}
}

// latestPlanID is the id of the newest plan.
func (h *harness) latestPlanID(t *testing.T) string {
	t.Helper()
	r := must(t, h.run(t, "plans", "list", "--limit", "1", "--json"))
	return r.JSON(t)["data"].([]any)[0].(map[string]any)["id"].(string)
}

// latestRevisionID is the id of the newest revision.
func (h *harness) latestRevisionID(t *testing.T) string {
	t.Helper()
	r := must(t, h.run(t, "revisions", "list", "--limit", "1", "--json"))
	return r.JSON(t)["data"].([]any)[0].(map[string]any)["id"].(string)
}

// TestPreviewOutputMatchesGoldenFile previews the §4 document and an
// unchanged export: the plan is rendered as config plan renders it, says
// it is a preview without a plan id, --detailed-exitcode tells changes
// from none, and nothing is stored.
func TestPreviewOutputMatchesGoldenFile(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	before := len(must(t, h.run(t, "plans", "list", "--json")).JSON(t)["data"].([]any))

	doc := writeJSON(t, "keenauth.json", exampleWithDeletion())
	preview := must(t, h.run(t, "config", "plan", "-f", doc, "--preview"))
	detailed := h.run(t, "config", "plan", "-f", doc, "--preview", "--detailed-exitcode")
	wantExit(t, detailed, 2)
	export := writeJSON(t, "export.json", must(t, h.run(t, "config", "export")).JSON(t))
	unchanged := must(t, h.run(t, "config", "plan", "-f", export, "--preview", "--detailed-exitcode"))
	golden(t, "preview", transcript(preview, detailed, unchanged))

	asJSON := must(t, h.run(t, "config", "plan", "-f", doc, "--preview", "--json")).JSON(t)
	if asJSON["status"] != "preview" || asJSON["id"] != nil {
		t.Errorf("--json: status %v, id %v", asJSON["status"], asJSON["id"])
	}
	if after := len(must(t, h.run(t, "plans", "list", "--json")).JSON(t)["data"].([]any)); after != before {
		t.Errorf("previews stored %d plans", after-before)
	}
}
