package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestExitCodeOfEveryClass(t *testing.T) {
	t.Parallel()
	api := func(status int, code string) error {
		return &apiError{status: status, problem: problem{Code: code}}
	}
	for _, c := range []struct {
		err  error
		want int
	}{
		{cmdLinef("bad flag"), ExitUsage},
		{usagef("missing variable"), ExitUsage},
		{api(400, "malformed_request"), ExitRefused},
		{api(401, "unauthenticated"), ExitRefused},
		{api(403, "insufficient_permissions"), ExitRefused},
		{api(404, "not_found"), ExitRefused},
		{api(409, "deletion_not_confirmed"), ExitRefused},
		{api(409, "connection_in_use"), ExitRefused},
		{api(409, "connection_test_required"), ExitRefused},
		{api(413, "config_document_too_large"), ExitRefused},
		{api(422, "validation_failed"), ExitRefused},
		{api(422, "idempotency_key_mismatch"), ExitRefused},
		{api(501, "not_implemented"), ExitRefused},
		{api(409, "config_conflict"), ExitStale},
		{api(409, "conflict"), ExitStale},
		{api(409, "config_plan_not_applicable"), ExitStale},
		{api(410, "config_plan_expired"), ExitStale},
		{api(429, "rate_limited"), ExitUnavailable},
		{api(409, "idempotency_key_in_use"), ExitUnavailable},
		{api(503, "service_unavailable"), ExitUnavailable},
		{api(500, "internal_error"), ExitUnavailable},
		{&networkError{url: "http://x", err: errors.New("connection reset by peer")}, ExitUnavailable},
		{&networkError{url: "http://x", err: &dialError{err: errors.New("connect: connection refused")}}, ExitRefused},
		{&redirectError{status: 307, location: "http://elsewhere.example/"}, ExitRefused},
		{context.Canceled, ExitInterrupted},
		{errors.New("cannot write out.json"), ExitRefused},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestEveryCommandHasHelpWithExamples walks the command tree: every
// command a user runs has a short description and examples, and --help
// answers 0.
func TestEveryCommandHasHelpWithExamples(t *testing.T) {
	t.Parallel()
	a := &app{env: func(string) string { return "" }}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || (c.HasParent() && c.Parent().Name() == "completion") {
			return
		}
		if c.Short == "" || c.Example == "" {
			t.Errorf("%s: Short %q, Example %q", c.CommandPath(), c.Short, c.Example)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCommand())

	var out, errw bytes.Buffer
	code := Run(context.Background(), []string{"config", "apply", "--help"}, func(string) string { return "" }, nil, &out, &errw)
	if code != 0 || !strings.Contains(out.String(), "Exit status:") || !strings.Contains(out.String(), "Examples:") {
		t.Errorf("apply --help: exit %d\n%s%s", code, out.String(), errw.String())
	}
}

func TestCompletionScriptsForEveryShell(t *testing.T) {
	t.Parallel()
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		var out, errw bytes.Buffer
		code := Run(context.Background(), []string{"completion", sh}, func(string) string { return "" }, nil, &out, &errw)
		if code != 0 || !strings.Contains(out.String(), "keenauth") {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %s", sh, code, out.Len(), errw.String())
		}
	}
}

func TestCompletionOfFlagValues(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	code := Run(context.Background(), []string{"__complete", "plans", "list", "--status", "ap"}, func(string) string { return "" }, nil, &out, &bytes.Buffer{})
	if code != 0 || !strings.Contains(out.String(), "applied\n") || !strings.Contains(out.String(), "applying\n") {
		t.Errorf("completion of --status: exit %d\n%s", code, out.String())
	}
}
