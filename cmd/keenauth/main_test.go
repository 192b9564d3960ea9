package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunAnswersHelpAndUsage(t *testing.T) {
	t.Parallel()
	env := func(string) string { return "" }
	var out, errw bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, env, nil, &out, &errw); code != 0 {
		t.Fatalf("--help: exit %d: %s", code, errw.String())
	}
	for _, want := range []string{"KEENAUTH_API_URL", "KEENAUTH_SECRET_KEY", "Exit status:", "completion", "Examples:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	out.Reset()
	errw.Reset()
	if code := run(context.Background(), []string{"config", "plan"}, env, nil, &out, &errw); code != 2 {
		t.Errorf("config plan without -f: exit %d, want 2", code)
	}
	if out.Len() != 0 || !strings.Contains(errw.String(), "-f FILE is required") {
		t.Errorf("stdout %q, stderr %q", out.String(), errw.String())
	}
}
