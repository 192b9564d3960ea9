package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestAnAPIURLEndingInV1IsNamed: KEENAUTH_API_URL is the server's root;
// one ending in /v1 is a usage error that names it and the root to use,
// before anything is sent.
func TestAnAPIURLEndingInV1IsNamed(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, nil)
	for _, u := range []string{f.URL + "/v1", f.URL + "/v1/"} {
		r := runAgainst(t, u, invocation{}, "plans", "list")
		wantExit(t, r, 2)
		if want := "the API URL " + u + " ends in /v1"; !strings.Contains(r.stderr, want) ||
			!strings.Contains(r.stderr, "without /v1 ("+f.URL+")") {
			t.Errorf("%s: stderr lacks %q and the root URL:\n%s", u, want, r.stderr)
		}
	}
	if got := f.requests(); len(got) != 0 {
		t.Errorf("requests were sent: %v", got)
	}
}

// TestASchemeMismatchIsNamedAndNotRetried: https:// to a plain-HTTP
// server, and http:// to a TLS server, each fail at once (exit 1, no
// "retrying") with a message naming the scheme to use.
func TestASchemeMismatchIsNamedAndNotRetried(t *testing.T) {
	t.Parallel()
	plain := newFakeAPI(t, nil)
	httpsURL := "https://" + strings.TrimPrefix(plain.URL, "http://")
	r := runAgainst(t, httpsURL, invocation{}, "plans", "list", "--retry-for", "20s")
	wantExit(t, r, 1)
	if want := "the API URL " + httpsURL + " uses https://, but the server at " + strings.TrimPrefix(plain.URL, "http://") +
		" speaks plain HTTP: use " + plain.URL; !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "retrying") {
		t.Errorf("https to plain HTTP: stderr lacks %q, or retried:\n%s", want, r.stderr)
	}

	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the TLS server got a request: %s", r.URL)
	}))
	t.Cleanup(tlsSrv.Close)
	httpURL := "http://" + strings.TrimPrefix(tlsSrv.URL, "https://")
	r = runAgainst(t, httpURL, invocation{}, "config", "apply", "cfgp_01m4qpqtywfs7930tb6kqn5rc5", "--retry-for", "20s")
	wantExit(t, r, 1)
	if want := "uses http://, but the server at " + strings.TrimPrefix(tlsSrv.URL, "https://") + " speaks HTTPS (TLS): use " + tlsSrv.URL; !strings.Contains(r.stderr, want) ||
		strings.Contains(r.stderr, "retrying") {
		t.Errorf("http to TLS: stderr lacks %q, or retried:\n%s", want, r.stderr)
	}
}

// TestPlanOfAnExportWithAResourceLeftOutWarns: config export, then the
// connection deleted from the file: config plan prints the
// resource_omitted warning and says how to delete it.
func TestPlanOfAnExportWithAResourceLeftOutWarns(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	file := writeJSON(t, "export.json", map[string]any{})
	must(t, h.run(t, "config", "export", "--types", "connection", "-o", file))
	var export map[string]any
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &export); err != nil {
		t.Fatal(err)
	}
	export["config"] = map[string]any{"connections": map[string]any{}}
	r := must(t, h.run(t, "config", "plan", "-f", writeJSON(t, "edited.json", export)))
	for _, want := range []string{
		"! connection/legacy: connection/legacy is listed in versions but left out of the document, so the plan leaves it unchanged",
		"(resource_omitted)",
		"A resource left out of the document is left unchanged: to delete it, write null for it in the file, or plan with --prune.",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, r.stdout)
		}
	}
	// With --prune it is a deletion, and not warned of.
	r = must(t, h.run(t, "config", "plan", "-f", writeJSON(t, "edited.json", export), "--prune"))
	if strings.Contains(r.stdout, "resource_omitted") || !strings.Contains(r.stdout, "- delete  connection/legacy") {
		t.Errorf("plan --prune:\n%s", r.stdout)
	}
}

// TestRebaseThatRevertsAMovedFieldWarns: the rebased plan names the field
// it writes back, with both values.
func TestRebaseThatRevertsAMovedFieldWarns(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	renamed := legacySpec()
	renamed["display_name"] = "Legacy 2"
	src := h.Plan(map[string]any{"connections": map[string]any{"legacy": renamed}}, false)["id"].(string)
	inactive := legacySpec()
	inactive["active"] = false
	h.Apply(h.Plan(map[string]any{"connections": map[string]any{"legacy": inactive}}, false)["id"].(string), map[string]any{})

	r := must(t, h.run(t, "config", "rebase", src))
	for _, want := range []string{
		"! connection/legacy: active was changed from true to false since the source plan was planned (connection/legacy is now at version 2); this plan writes true again (reverts_moved_change)",
		"This rebase writes back values that changed since its source was planned",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("rebase output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestListsPrintTheirTypesCompactly: a plan of every kind is "all", of
// one kind that kind, else how many of the nine.
func TestListsPrintTheirTypesCompactly(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	file := writeJSON(t, "export.json", map[string]any{})
	must(t, h.run(t, "config", "export", "-o", file))
	must(t, h.run(t, "config", "plan", "-f", file))
	must(t, h.run(t, "config", "plan", "-f", writeJSON(t, "two.json", map[string]any{
		"connections": map[string]any{"legacy": legacySpec()}, "roles": map[string]any{"r": map[string]any{"display_name": "R"}}})))
	r := must(t, h.run(t, "plans", "list"))
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 {
		t.Fatalf("plans list:\n%s", r.stdout)
	}
	for i, want := range []string{"2 of 9", "all", "connection"} {
		if !strings.HasSuffix(lines[i+1], "  "+want) {
			t.Errorf("row %d = %q, want TYPES %q", i+1, lines[i+1], want)
		}
	}
	for _, l := range lines {
		if len(l) > 120 {
			t.Errorf("a line of %d characters: %q", len(l), l)
		}
	}
	r = must(t, h.run(t, "revisions", "list"))
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[1], "  connection") {
		t.Errorf("revisions list:\n%s", r.stdout)
	}
}
