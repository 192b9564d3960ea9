package e2e_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/keenauth/configplans/test/procs"
)

// walkthrough returns the shell lines of the README's curl walkthrough: the
// first sh block of its "## Walkthrough" section.
func walkthrough(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Walkthrough")
	if !ok {
		t.Fatal("README.md has no Walkthrough section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "\n```sh\n")
	if !ok {
		t.Fatal("the README's Walkthrough section has no sh block")
	}
	block, _, ok = strings.Cut(block, "\n```")
	if !ok {
		t.Fatal("the README's walkthrough block is not closed")
	}
	return strings.Split(block, "\n")
}

var (
	exportLine = regexp.MustCompile(`(?m)^export (KEENAUTH_API_URL|KEENAUTH_SECRET_KEY)=(\S+)$`)
	statusLine = regexp.MustCompile(`^HTTP (\d{3})$`)
)

// TestREADMEWalkthroughRunsAsWritten runs the README's curl walkthrough
// with bash against a fresh keenauthd dev: its first two lines (start the
// server with its logs in dev.log, paste its export lines) are what the
// test does itself, the rest runs as written. It prints an HTTP status line
// per request and jq's view of each answer: the statuses must be those of
// two plans and two applies, the applies must apply, the revisions list
// both, and the configuration must end as the walkthrough says.
func TestREADMEWalkthroughRunsAsWritten(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's walkthrough needs %s: %v", tool, err)
		}
	}
	lines := walkthrough(t)
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "go run ./cmd/keenauthd dev 2>dev.log &") ||
		!strings.HasPrefix(lines[1], "export KEENAUTH_API_URL=http://127.0.0.1:8080 KEENAUTH_SECRET_KEY=ksk_…") {
		t.Fatalf("the walkthrough no longer starts by starting keenauthd dev and pasting its export lines; this test runs the rest:\n%s",
			strings.Join(lines, "\n"))
	}

	// keenauthd dev, as the first line starts it (on a free port).
	n := procs.Start(t, binary, append(os.Environ(), "KEENAUTHD_SHUTDOWN_TIMEOUT=5s"), "dev", "--listen", "127.0.0.1:0", "--data", t.TempDir())
	vars := map[string]string{}
	n.WaitFor(t, "keenauthd dev's export lines", func() bool {
		for _, m := range exportLine.FindAllStringSubmatch(n.Stdout(), -1) {
			vars[m[1]] = m[2]
		}
		return len(vars) == 2
	})

	// The rest, as written, in a directory of its own.
	dir := t.TempDir()
	script := filepath.Join(dir, "walkthrough.sh")
	if err := os.WriteFile(script, []byte(strings.Join(lines[2:], "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("bash", "-euo", "pipefail", script)
	sh.Dir = dir
	sh.Env = append(os.Environ(), "KEENAUTH_API_URL="+vars["KEENAUTH_API_URL"], "KEENAUTH_SECRET_KEY="+vars["KEENAUTH_SECRET_KEY"])
	var stdout, stderr bytes.Buffer
	sh.Stdout, sh.Stderr = &stdout, &stderr
	if err := sh.Run(); err != nil {
		t.Fatalf("the walkthrough: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	t.Logf("the walkthrough printed:\n%s", stdout.String())
	// What it printed: a status line per request, and jq's view of plan,
	// apply, plan, apply and each revision.
	var statuses []string
	var views bytes.Buffer
	for _, l := range strings.Split(stdout.String(), "\n") {
		if m := statusLine.FindStringSubmatch(l); m != nil {
			statuses = append(statuses, m[1])
		} else {
			views.WriteString(l + "\n")
		}
	}
	if want := []string{"201", "200", "201", "200"}; strings.Join(statuses, " ") != strings.Join(want, " ") {
		t.Fatalf("the walkthrough's statuses = %v, want %v:\n%s", statuses, want, stdout.String())
	}
	var answers []map[string]any
	dec := json.NewDecoder(&views)
	for {
		var a map[string]any
		if err := dec.Decode(&a); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the walkthrough printed something that is not JSON: %v\n%s", err, stdout.String())
		}
		if _, problem := a["code"]; problem {
			t.Fatalf("the walkthrough got a problem: %v", a)
		}
		answers = append(answers, a)
	}
	if len(answers) != 6 {
		t.Fatalf("the walkthrough printed %d answers, want 6 (plan, apply, plan, apply, two revisions):\n%v", len(answers), answers)
	}
	for _, i := range []int{1, 3} {
		if answers[i]["status"] != "applied" || answers[i]["id"] != answers[i-1]["id"] || answers[i]["revision_id"] == nil {
			t.Errorf("answer %d = %v, want plan %v applied", i, answers[i], answers[i-1]["id"])
		}
	}
	if answers[4]["plan_id"] != answers[3]["id"] || answers[5]["plan_id"] != answers[1]["id"] {
		t.Errorf("revisions = %v, %v; want the two applies', newest first", answers[4], answers[5])
	}

	// The configuration the walkthrough leaves: the role, no connection.
	req, _ := http.NewRequest("GET", vars["KEENAUTH_API_URL"]+"/v1/config", nil)
	req.Header.Set("Authorization", "Bearer "+vars["KEENAUTH_SECRET_KEY"])
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var export struct {
		Config struct {
			Roles       map[string]any
			Connections map[string]any
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&export); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %d %v", resp.StatusCode, err)
	}
	if _, ok := export.Config.Roles["support"]; !ok || len(export.Config.Connections) != 0 {
		t.Errorf("after the walkthrough: roles %v, connections %v; want the role support and no connection",
			export.Config.Roles, export.Config.Connections)
	}
}
