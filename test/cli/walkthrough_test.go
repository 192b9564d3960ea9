package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCIWalkthrough drives the CLI as a CI job does, reading --json and
// exit codes only: export → edit → plan → apply (confirming the deletion)
// → revisions list → restore → apply → logs, and the export afterwards is
// the export before.
func TestCIWalkthrough(t *testing.T) {
	t.Parallel()
	h := setup(t)
	dir := t.TempDir()
	jsonOf := func(args ...string) map[string]any {
		t.Helper()
		return must(t, h.run(t, append(args, "--json")...)).JSON(t)
	}
	confirmations := func(plan map[string]any) []string {
		var out []string
		for _, w := range plan["warnings"].([]any) {
			if w := w.(map[string]any); w["code"] == "deletion_requires_confirmation" {
				out = append(out, "--confirm-deletion", w["target"].(string))
			}
		}
		return out
	}

	seed := jsonOf("config", "plan", "-f", writeJSON(t, "seed.json", map[string]any{"connections": map[string]any{"legacy": legacySpec()}}))
	seeded := jsonOf("config", "apply", seed["id"].(string))
	if seeded["status"] != "applied" {
		t.Fatalf("seed apply: %v", seeded)
	}

	// export, edited by the job: legacy goes, an API and GitHub come.
	exportFile := filepath.Join(dir, "export.json")
	must(t, h.run(t, "config", "export", "--json", "-o", exportFile))
	raw, err := os.ReadFile(exportFile)
	if err != nil {
		t.Fatal(err)
	}
	before := decodeJSON(t, string(raw))
	if before["versions"].(map[string]any)["connection/legacy"] != 1.0 {
		t.Fatalf("export --json versions: %v", before["versions"])
	}
	var edited map[string]any
	_ = json.Unmarshal(raw, &edited)
	cfg := edited["config"].(map[string]any)
	cfg["connections"] = map[string]any{"legacy": nil, "github": exampleNeedingSecret()["connections"].(map[string]any)["github"]}
	cfg["apis"] = exampleNeedingSecret()["apis"]
	desired := writeJSON(t, "desired.json", edited)

	plan := jsonOf("config", "plan", "-f", desired)
	if s := plan["summary"].(map[string]any); s["create"] != 2.0 || s["delete"] != 1.0 || s["update"] != 0.0 {
		t.Fatalf("plan summary: %v", s)
	}
	if n := len(plan["required_secrets"].([]any)); n != 0 || plan["requires_sp_host"] != false {
		t.Fatalf("plan needs secrets or a host: %v", plan)
	}
	applyArgs := append([]string{"config", "apply", plan["id"].(string)}, confirmations(plan)...)
	if len(applyArgs) != 5 {
		t.Fatalf("confirmations: %v", applyArgs)
	}
	applied := jsonOf(applyArgs...)
	if applied["status"] != "applied" || applied["revision_id"] == nil {
		t.Fatalf("apply: %v", applied)
	}
	wantExit(t, h.run(t, append(applyArgs, "--json")...), 3)

	revs := jsonOf("revisions", "list")["data"].([]any)
	if len(revs) != 2 || revs[0].(map[string]any)["id"] != applied["revision_id"] {
		t.Fatalf("revisions: %v, want %v first", revs, applied["revision_id"])
	}
	restore := jsonOf("revisions", "restore", applied["revision_id"].(string))
	if restore["status"] != "planned" {
		t.Fatalf("restore plan: %v", restore)
	}
	restored := jsonOf(append([]string{"config", "apply", restore["id"].(string)}, confirmations(restore)...)...)
	if restored["status"] != "applied" {
		t.Fatalf("restore apply: %v", restored)
	}

	logs := jsonOf("logs", "--type", "config.applied")["data"].([]any)
	var planIDs []any
	for _, l := range logs {
		planIDs = append(planIDs, l.(map[string]any)["plan_id"])
	}
	if diff := cmp.Diff([]any{restore["id"], plan["id"], seed["id"]}, planIDs); diff != "" {
		t.Errorf("config.applied entries (-want +got):\n%s", diff)
	}

	after := jsonOf("config", "export")
	if diff := cmp.Diff(before["config"], after["config"]); diff != "" {
		t.Errorf("the restore did not bring the configuration back (-before +after):\n%s", diff)
	}
}
