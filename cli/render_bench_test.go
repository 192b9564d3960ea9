package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// planAnswer is the API's answer of a plan of n updates of small api specs,
// each changing its first scope's description, as P14 of the bench plans
// (test/bench/p14.go): about 1 MB for 1,000 changes.
func planAnswer(tb testing.TB, n int) []byte {
	tb.Helper()
	pad := func(s string) string {
		for len(s) < 100 {
			s += "It lets a client read the catalogue entries that belong to its tenant. "
		}
		return s[:100]
	}
	changes := make([]map[string]any, n)
	for i := range changes {
		key := fmt.Sprintf("cli-%05d", i)
		scopes := make([]map[string]any, 4)
		for j := range scopes {
			desc := fmt.Sprintf("Scope %d of %s. ", j, key)
			if j == 0 {
				desc = fmt.Sprintf("Scope 0 of %s, variant 1. ", key)
			}
			scopes[j] = map[string]any{"value": fmt.Sprintf("items-%02d:read", j), "description": pad(desc)}
		}
		changes[i] = map[string]any{"kind": "api", "key": key, "action": "update", "base_version": 1,
			"spec": map[string]any{"identifier": "https://api.bench.example/" + key, "display_name": "Bench API " + key,
				"scopes": scopes, "token_lifetime_seconds": 3600},
			"diff": []map[string]any{{"op": "replace", "path": "/scopes/0/description",
				"old": pad(fmt.Sprintf("Scope 0 of %s, variant 0. ", key)), "value": scopes[0]["description"]}},
			"requires_secret": false}
	}
	b, err := json.Marshal(map[string]any{"id": "cfgp_01m92ttsgdsvhwxh4vwby2g4hy", "object": "config_plan",
		"environment_id": "env_01m92ttd3cgmc81y34y6911ppm", "status": "planned", "prune": false, "types": []string{"api"},
		"changes": changes, "warnings": []any{}, "required_secrets": []any{}, "requires_sp_host": false,
		"summary":    map[string]int{"create": 0, "update": n, "delete": 0, "no_op": 0},
		"created_at": "2026-12-05T10:08:41.400Z", "expires_at": "2026-12-06T10:08:41.400Z"})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// countingWriter counts the writes that reach it (a pipe's write calls).
type countingWriter struct {
	io.Writer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Writer.Write(p)
}

// TestPrintPlanWritesInFewCalls: a plan of 1,000 changes reaches standard
// output in a few large writes, not one per line (2,000 write calls to a
// pipe, each a system call, before).
func TestPrintPlanWritesInFewCalls(t *testing.T) {
	t.Parallel()
	body := planAnswer(t, 1000)
	var out strings.Builder
	w := &countingWriter{Writer: &out}
	a := &app{env: func(string) string { return "" }, stdout: w}
	if err := a.printPlan(&response{status: 200, body: body}, planView{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "api/cli-00000") || !strings.Contains(text, "api/cli-00999") ||
		!strings.Contains(text, "Summary: 0 to create, 1000 to update, 0 to delete, 0 unchanged.") {
		t.Fatalf("printPlan wrote %d bytes without the first and last change or the summary", len(text))
	}
	if lines := strings.Count(text, "\n"); w.writes > lines/100 {
		t.Errorf("printPlan wrote %d lines in %d writes", lines, w.writes)
	}
}

// BenchmarkRenderPlan is the work of `keenauth config show` after the
// answer has arrived: decoding a 1,000-change plan and writing it as text
// (P14 of the bench).
func BenchmarkRenderPlan(b *testing.B) {
	body := planAnswer(b, 1000)
	a := &app{env: func(string) string { return "" }, stdout: io.Discard}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := a.printPlan(&response{status: 200, body: body}, planView{}); err != nil {
			b.Fatal(err)
		}
	}
}
