package cli_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recorder is a front server that keeps the last answer of the API to a
// path, as sent.
type recorder struct {
	URL  string
	body map[string][]byte
}

func (h *harness) recorder(t *testing.T) *recorder {
	t.Helper()
	rec := &recorder{body: map[string][]byte{}}
	rec.URL = h.frontServer(t, func(w http.ResponseWriter, r *http.Request, forward func()) {
		rr := httptest.NewRecorder()
		h.Handler.ServeHTTP(rr, r)
		rec.body[r.Method+" "+r.URL.Path] = rr.Body.Bytes()
		for k, v := range rr.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rr.Code)
		_, _ = w.Write(rr.Body.Bytes())
	})
	return rec
}

func TestExportWritesTheConfigDocumentWithItsVersions(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	r := must(t, h.run(t, "config", "export"))
	got := r.JSON(t)
	if len(got) != 2 {
		t.Errorf("export printed members other than config and versions: %v", got)
	}
	want, wantVersions := h.Export()
	if diff := cmp.Diff(want, got["config"]); diff != "" {
		t.Errorf("exported config differs from the API's (-api +cli):\n%s", diff)
	}
	if diff := cmp.Diff(wantVersions, got["versions"]); diff != "" || wantVersions["connection/legacy"] != 1.0 {
		t.Errorf("exported versions differ from the API's (-api +cli):\n%s", diff)
	}
	if !strings.HasPrefix(r.stdout, "{\n  \"config\": {") {
		t.Errorf("export is not indented for people:\n%s", r.stdout)
	}

	file := filepath.Join(t.TempDir(), "out.json")
	w := must(t, h.run(t, "config", "export", "--types", "connection,api", "-o", file))
	if w.stdout != "" || !strings.Contains(w.stderr, file) {
		t.Errorf("export -o: stdout %q, stderr %q", w.stdout, w.stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := decodeJSON(t, string(b))["config"].(map[string]any)
	if len(cfg) != 2 || cfg["connections"] == nil || cfg["apis"] == nil {
		t.Errorf("export --types connection,api wrote %v", cfg)
	}
	if cfg["connections"].(map[string]any)["legacy"] == nil {
		t.Errorf("export lost the legacy connection: %v", cfg)
	}
}

func TestJSONPrintsTheAPIAnswerUnchanged(t *testing.T) {
	t.Parallel()
	h := setup(t)
	rec := h.recorder(t)
	env := invocation{env: map[string]string{"KEENAUTH_API_URL": rec.URL}}
	doc := writeJSON(t, "doc.json", map[string]any{"connections": map[string]any{"legacy": legacySpec()}})

	for _, c := range []struct {
		args []string
		call string
	}{
		{[]string{"config", "export", "--json"}, "GET /v1/config"},
		{[]string{"config", "plan", "-f", doc, "--json"}, "POST /v1/config-plans"},
		{[]string{"plans", "list", "--json"}, "GET /v1/config-plans"},
		{[]string{"--json", "logs"}, "GET /v1/management-logs"},
		{[]string{"revisions", "list", "--json"}, "GET /v1/config-revisions"},
	} {
		r := must(t, h.runWith(t, env, c.args...))
		if want := string(rec.body[c.call]) + "\n"; r.stdout != want {
			t.Errorf("keenauth %s printed\n%s\nthe API answered\n%s", strings.Join(c.args, " "), r.stdout, want)
		}
	}
	// A problem too, on stdout, with the sentence on stderr.
	r := h.runWith(t, env, "config", "show", "cfgp_00000000000000000000000000", "--json")
	wantExit(t, r, 1)
	if want := string(rec.body["GET /v1/config-plans/cfgp_00000000000000000000000000"]) + "\n"; r.stdout != want {
		t.Errorf("--json problem printed\n%s\nthe API answered\n%s", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "not_found") || strings.Contains(r.stderr, "{") {
		t.Errorf("stderr of a --json problem: %s", r.stderr)
	}
}

func TestPlanAcceptsAnExportOrABareDocumentFromAFileOrStdin(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	bare := map[string]any{"connections": map[string]any{"legacy": nil}}
	bareFile := writeJSON(t, "bare.json", bare)
	wrapped := map[string]any{"config": bare, "versions": map[string]any{"connection/legacy": 1}}
	wrappedFile := writeJSON(t, "wrapped.json", wrapped)
	wrappedJSON, _ := json.Marshal(wrapped)
	bareJSON, _ := json.Marshal(bare)

	for name, c := range map[string]struct {
		stdin string
		args  []string
	}{
		"bare file":          {"", []string{"config", "plan", "-f", bareFile, "--json"}},
		"export file":        {"", []string{"config", "plan", "--json", "-f", wrappedFile}},
		"bare on stdin":      {string(bareJSON), []string{"config", "plan", "-f", "-", "--json"}},
		"export on stdin":    {string(wrappedJSON), []string{"--json", "config", "plan", "-f", "-"}},
		"export, pruned too": {string(wrappedJSON), []string{"config", "plan", "--prune", "-f", "-", "--json"}},
	} {
		r := must(t, h.runWith(t, invocation{stdin: c.stdin}, c.args...))
		p := r.JSON(t)
		changes := p["changes"].([]any)
		if len(changes) != 1 {
			t.Fatalf("%s: changes %v", name, changes)
		}
		ch := changes[0].(map[string]any)
		if ch["kind"] != "connection" || ch["key"] != "legacy" || ch["action"] != "delete" {
			t.Errorf("%s: change %v", name, ch)
		}
		if want := strings.Contains(name, "pruned"); p["prune"] != want {
			t.Errorf("%s: prune = %v", name, p["prune"])
		}
	}

	// The export of the CLI is a valid plan input: planned again, no change.
	exported := must(t, h.run(t, "config", "export")).stdout
	again := must(t, h.runWith(t, invocation{stdin: exported}, "config", "plan", "-f", "-"))
	if !strings.Contains(again.stdout, "No changes: the configuration already matches the document.") ||
		strings.Contains(again.stdout, "Next,") {
		t.Errorf("plan of the export:\n%s", again.stdout)
	}
}

func TestPlanRefusesAnUnreadableDocumentBeforeSendingIt(t *testing.T) {
	t.Parallel()
	h := setup(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, c := range map[string]struct {
		file, want string
	}{
		"missing file":     {filepath.Join(dir, "nope.json"), "cannot read the document"},
		"not JSON":         {write("bad.json", "{\n  \"apis\": {,\n}"), "is not a JSON object: invalid character ',' looking for beginning of object key string (line 2, column"},
		"a list":           {write("list.json", "[]"), "the top level is a JSON array"},
		"empty":            {write("empty.json", "  \n"), "is empty"},
		"export and extra": {write("extra.json", `{"config": {}, "prune": true}`), `an export has no member "prune"`},
	} {
		r := h.run(t, "config", "plan", "-f", c.file)
		wantExit(t, r, 2)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: stderr %q, want %q", name, r.stderr, c.want)
		}
	}
	if got := must(t, h.run(t, "plans", "list", "--json")).JSON(t)["data"].([]any); len(got) != 0 {
		t.Errorf("a refused document made plans: %v", got)
	}
}

func TestFlagsMayComeBeforeOrAfterPositionalArguments(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	id := h.Plan(noSecretDocument(), false)["id"].(string)
	for _, args := range [][]string{
		{"config", "apply", id, "--validate-only", "--confirm-deletion", "connection/legacy"},
		{"config", "apply", "--validate-only", "--confirm-deletion", "connection/legacy", id},
		{"--json", "config", "apply", "--validate-only", id, "--confirm-deletion=connection/legacy"},
	} {
		r := must(t, h.run(t, args...))
		if !strings.Contains(r.stdout, id) {
			t.Errorf("keenauth %s: %s", strings.Join(args, " "), r.stdout)
		}
	}
}

func TestValidateOnlyRunsTheChecksAndWritesNothing(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	id := h.Plan(noSecretDocument(), false)["id"].(string)

	refused := h.run(t, "config", "apply", id, "--validate-only")
	wantExit(t, refused, 1)
	if !strings.Contains(refused.stderr, "--confirm-deletion connection/legacy") {
		t.Errorf("validate-only refusal: %s", refused.stderr)
	}
	ok := must(t, h.run(t, "config", "apply", id, "--validate-only", "--confirm-deletion", "connection/legacy"))
	if want := "Plan " + id + " passes every check of the apply (validate only: nothing was written; the plan is still planned).\n"; ok.stdout != want {
		t.Errorf("validate-only said %q", ok.stdout)
	}
	if st := h.Do(apitestGet("/v1/config-plans/" + id)).JSON()["status"]; st != "planned" {
		t.Errorf("plan status after validate-only = %v", st)
	}
	cfg, _ := h.Export()
	if cfg["connections"].(map[string]any)["legacy"] == nil {
		t.Errorf("validate-only deleted legacy")
	}
}

func TestColourOnlyOnATerminalWithoutNoColor(t *testing.T) {
	t.Parallel()
	h := setup(t)
	doc := writeJSON(t, "doc.json", noSecretDocument())
	for name, c := range map[string]struct {
		inv  invocation
		want bool
	}{
		"terminal":            {invocation{stdoutTTY: true}, true},
		"terminal, NO_COLOR":  {invocation{stdoutTTY: true, env: map[string]string{"NO_COLOR": "1"}}, false},
		"terminal, TERM=dumb": {invocation{stdoutTTY: true, env: map[string]string{"TERM": "dumb"}}, false},
		"pipe":                {invocation{}, false},
		"stderr terminal":     {invocation{stderrTTY: true}, false},
	} {
		r := must(t, h.runWith(t, c.inv, "config", "plan", "-f", doc))
		if got := strings.Contains(r.stdout, "\x1b[32m+ create\x1b[0m"); got != c.want {
			t.Errorf("%s: coloured = %v, want %v:\n%q", name, got, c.want, r.stdout)
		}
		if !c.want && bytes.ContainsRune([]byte(r.stdout), '\x1b') {
			t.Errorf("%s: escape sequences in plain output", name)
		}
	}
}

func TestCompletionOffersThePlansToApply(t *testing.T) {
	t.Parallel()
	h := setup(t)
	planned := h.Plan(map[string]any{"apis": exampleNeedingSecret()["apis"]}, false)["id"].(string)
	applied := h.Plan(map[string]any{"connections": map[string]any{"legacy": legacySpec()}}, false)["id"].(string)
	h.Apply(applied, map[string]any{})

	r := must(t, h.run(t, "__complete", "config", "apply", "cfgp_"))
	if !strings.Contains(r.stdout, planned+"\tplanned +1 ~0 -0 =0 ") || strings.Contains(r.stdout, applied) {
		t.Errorf("completion of config apply:\n%s", r.stdout)
	}
	r = must(t, h.run(t, "__complete", "config", "show", ""))
	if !strings.Contains(r.stdout, planned) || !strings.Contains(r.stdout, applied) {
		t.Errorf("completion of config show:\n%s", r.stdout)
	}
}

// TestPlanOfAStaleExportIsRefused edits an export after the configuration
// changed: config plan sends the export's versions, the API refuses the
// plan (exit 3), each moved resource is named by its versions member, and
// nothing is stored.
func TestPlanOfAStaleExportIsRefused(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	exported := must(t, h.run(t, "config", "export", "--types", "connection,api")).JSON(t)

	// Meanwhile, someone renames legacy (version 1 → 2).
	renamed := legacySpec()
	renamed["display_name"] = "Legacy (renamed)"
	p := h.Plan(map[string]any{"connections": map[string]any{"legacy": renamed}}, false)
	h.Apply(p["id"].(string), map[string]any{})

	// The edit of the export: legacy inactive.
	exported["config"].(map[string]any)["connections"].(map[string]any)["legacy"].(map[string]any)["active"] = false
	edited, _ := json.Marshal(exported)
	before := len(must(t, h.run(t, "plans", "list", "--json")).JSON(t)["data"].([]any))
	stale := h.runWith(t, invocation{stdin: string(edited)}, "config", "plan", "-f", "-")
	wantExit(t, stale, 3)
	golden(t, "stale", transcript(stale))
	if after := len(must(t, h.run(t, "plans", "list", "--json")).JSON(t)["data"].([]any)); after != before {
		t.Errorf("the refused plan was stored: %d plans, then %d", before, after)
	}

	// A file names itself; without the versions the same edit is planned.
	file := writeJSON(t, "export.json", exported)
	r := h.run(t, "config", "plan", "-f", file)
	wantExit(t, r, 3)
	if !strings.Contains(r.stderr, "versions connection/legacy in "+file+": ") {
		t.Errorf("the refusal does not name the versions member and the file:\n%s", r.stderr)
	}
	delete(exported, "versions")
	must(t, h.run(t, "config", "plan", "-f", writeJSON(t, "edited.json", exported)))
}
