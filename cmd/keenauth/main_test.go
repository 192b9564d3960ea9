package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
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

// TestReleaseBuildsCarryTheirVersionAndCommit builds keenauth as a release
// does, the version and commit set with -ldflags -X, and reads them back.
// (-buildvcs=true stamps the commit too, but only in a checkout whose .git
// is a directory: the go command does not see a git worktree's .git file.)
func TestReleaseBuildsCarryTheirVersionAndCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "keenauth")
	const pkg = "github.com/keenauth/configplans/cli"
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X "+pkg+".version=v9.9.9-test -X "+pkg+".commit=0123456789abcdef0123456789abcdef01234567", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("keenauth version: %v", err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if v["version"] != "v9.9.9-test" || v["commit"] != "0123456789abcdef0123456789abcdef01234567" || v["go"] != runtime.Version() {
		t.Errorf("version --json = %s", out)
	}
	human, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(human), "keenauth v9.9.9-test\ncommit 0123456789abcdef0123456789abcdef01234567\n") ||
		strings.Contains(string(human), "development build") {
		t.Errorf("keenauth version: %v\n%s", err, human)
	}
}
