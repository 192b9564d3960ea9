package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/keenauth/configplans/config"
)

// docBlock returns the lines of the first sh block of a section of
// docs/cli.md.
func docBlock(t *testing.T, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("docs/cli.md has no section %q", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "\n```sh\n")
	if !ok {
		t.Fatalf("the section %q has no sh block", heading)
	}
	block, _, ok = strings.Cut(block, "\n```\n")
	if !ok {
		t.Fatalf("the sh block of %q is not closed", heading)
	}
	return strings.Split(block, "\n")
}

// shellEnv is this process's environment without what the CLI, the
// walkthrough or a runner reads, plus extra.
func shellEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "PATH" || strings.HasPrefix(name, "KEENAUTH_") || strings.HasPrefix(name, "STAGING_") ||
			strings.HasPrefix(name, "GITHUB_") || name == "NO_COLOR" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// runBash runs script with bash in dir, as a CI runner does (-e, pipefail).
func runBash(t *testing.T, dir, script string, env []string) (stdout, stderr string, err error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", path)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("this test needs %s: %v", tool, err)
		}
	}
}

// TestPromoteWalkthroughRunsAsWritten runs the "Promote from staging to
// production" block of docs/cli.md with bash against two environments of
// a test server: its first two lines (the two environments' URLs and keys)
// are what the test provides; the rest runs as written. It must succeed,
// and leave each environment with its own values.
func TestPromoteWalkthroughRunsAsWritten(t *testing.T) {
	t.Parallel()
	needTools(t, "bash", "jq")
	lines := docBlock(t, "Promote from staging to production")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "export STAGING_URL=https://config.keenauth.example STAGING_KEY=ksk_… ") ||
		!strings.HasPrefix(lines[1], "export KEENAUTH_API_URL=https://config.keenauth.example KEENAUTH_SECRET_KEY=ksk_… ") {
		t.Fatalf("the walkthrough no longer starts with the two environments' export lines; this test provides them and runs the rest:\n%s",
			strings.Join(lines, "\n"))
	}
	h := setup(t)
	stg := h.newEnvironment(t, "Staging")
	env := shellEnv(append(keenauthOnPath(t), "STAGING_URL="+stg.URL, "STAGING_KEY="+stg.Secret,
		"KEENAUTH_API_URL="+h.URL, "KEENAUTH_SECRET_KEY="+h.Secret)...)
	stdout, stderr, err := runBash(t, t.TempDir(), strings.Join(lines[2:], "\n")+"\n", env)
	if err != nil {
		t.Fatalf("the walkthrough: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	for _, want := range []string{"Plan preview for", "Applied plan", "No changes: the configuration already matches the document."} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the walkthrough did not print %q:\n%s", want, stdout)
		}
	}
	for _, secret := range []string{h.Secret, stg.Secret} {
		if strings.Contains(stdout+stderr, secret) {
			t.Error("the walkthrough printed a key")
		}
	}

	prod, _ := h.Export()
	stgCfg := decodeJSON(t, must(t, stg.run(t, invocation{}, "config", "export", "--json")).stdout)["config"].(map[string]any)
	for _, tc := range []struct {
		cfg                  map[string]any
		name, host, callback string
		lifetime             float64
	}{
		{prod, "Shop", "https://api.shop.example/orders", "https://portal.shop.example/callback", 3600},
		{stgCfg, "Shop (staging)", "https://api.staging.shop.example/orders", "https://portal.staging.shop.example/callback", 3600},
	} {
		api := tc.cfg["apis"].(map[string]any)["orders"].(map[string]any)
		app := tc.cfg["applications"].(map[string]any)["portal"].(map[string]any)
		if tc.cfg["environment_settings"].(map[string]any)["display_name"] != tc.name || api["identifier"] != tc.host ||
			api["token_lifetime_seconds"] != tc.lifetime || app["callback_urls"].([]any)[0] != tc.callback {
			t.Errorf("%s: environment %v, api %v, application %v", tc.name, tc.cfg["environment_settings"], api, app)
		}
	}
}

// workflow is what this test reads of a GitHub Actions workflow.
type workflow struct {
	Jobs map[string]struct {
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

var expression = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// TestPullRequestWorkflowRunsLocally runs the run: steps of
// docs/examples/keenauth-plan.yml with bash, as written, in a checkout
// holding keenauth/keenauth.yaml and keenauth/production.yaml: the ${{ }}
// expressions get test values, the uses: steps and the go install step are
// skipped (keenauth is on the PATH), and GITHUB_API_URL points at a local
// server standing for GitHub's API, which must receive the plan's markdown
// as the pull request's comment. A document that cannot be planned fails
// the plan step, and nothing is posted.
func TestPullRequestWorkflowRunsLocally(t *testing.T) {
	t.Parallel()
	needTools(t, "bash", "jq", "curl")
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "keenauth-plan.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	job, ok := wf.Jobs["plan"]
	if !ok || len(job.Steps) == 0 {
		t.Fatalf("the workflow has no job plan with steps: %+v", wf)
	}

	h := setup(t)
	var readPerms []string
	for _, p := range config.AllPermissions() {
		if strings.HasSuffix(p, ":read") {
			readPerms = append(readPerms, p)
		}
	}
	planKey := h.Key(append(readPerms, "config:write")...)
	var mu sync.Mutex
	var comments []string
	github := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Body string `json:"body"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/repos/shop/identity/issues/7/comments" ||
			r.Header.Get("Authorization") != "Bearer gh-test-token" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, `{"message": "unexpected request"}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		comments = append(comments, body.Body)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id": 1}`))
	}))
	t.Cleanup(github.Close)
	values := map[string]string{
		"vars.KEENAUTH_API_URL":            h.URL,
		"secrets.KEENAUTH_PLAN_KEY":        planKey,
		"github.token":                     "gh-test-token",
		"github.event.pull_request.number": "7",
	}
	eval := func(s string) string {
		return expression.ReplaceAllStringFunc(s, func(m string) string {
			name := expression.FindStringSubmatch(m)[1]
			v, ok := values[name]
			if !ok {
				t.Fatalf("the workflow uses ${{ %s }}, which this test gives no value", name)
			}
			return v
		})
	}

	checkout := t.TempDir()
	if err := os.MkdirAll(filepath.Join(checkout, "keenauth"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(checkout, "keenauth", name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("keenauth.yaml", templateYAML)
	production := `{"ENV_LABEL": "(production)", "API_HOST": "api.shop.example", "SESSION_HOURS": 72, "TOKEN_LIFETIME": 3600,
		"ORDER_SCOPES": [{"value": "read:orders", "description": "Read orders"}]}`
	write("production.yaml", production)

	runSteps := func() (ran []string, failed error) {
		base := shellEnv(append(keenauthOnPath(t), "CI=true", "GITHUB_ACTIONS=true", "GITHUB_API_URL="+github.URL,
			"GITHUB_REPOSITORY=shop/identity", "GITHUB_OUTPUT="+filepath.Join(t.TempDir(), "output"))...)
		for k, v := range job.Env {
			base = append(base, k+"="+eval(v))
		}
		for _, st := range job.Steps {
			switch {
			case st.Uses != "":
				continue
			case st.Name == "Install keenauth":
				if !strings.HasPrefix(st.Run, "go install github.com/keenauth/configplans/cmd/keenauth@") {
					t.Fatalf("the install step runs %q", st.Run)
				}
				continue
			}
			if expression.MatchString(st.Run) {
				t.Errorf("step %q has ${{ }} in its script: pass values through env instead (script injection)", st.Name)
			}
			env := append([]string(nil), base...)
			for k, v := range st.Env {
				env = append(env, k+"="+eval(v))
			}
			ran = append(ran, st.Name)
			stdout, stderr, err := runBash(t, checkout, st.Run, env)
			if strings.Contains(stdout+stderr, planKey) {
				t.Errorf("step %q printed the plan key", st.Name)
			}
			if err != nil {
				return ran, &stepError{st.Name, err, stdout, stderr}
			}
		}
		return ran, nil
	}

	ran, err := runSteps()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Plan", "Post the plan on the pull request"}; strings.Join(ran, ",") != strings.Join(want, ",") {
		t.Errorf("ran the steps %q, want %q", ran, want)
	}
	id := h.latestPlanID(t)
	shown := must(t, h.run(t, "config", "show", id, "--format", "markdown")).stdout
	mu.Lock()
	got := append([]string(nil), comments...)
	mu.Unlock()
	if len(got) != 1 || got[0] != shown {
		t.Fatalf("the pull request got %d comment(s):\n%s\nwant the plan's markdown:\n%s", len(got), strings.Join(got, "\n---\n"), shown)
	}
	if !strings.HasPrefix(got[0], "### Keenauth plan `"+id+"`: 2 to create, 1 to update, 0 to delete, 0 unchanged\n") {
		t.Errorf("the comment starts %q", strings.SplitN(got[0], "\n", 2)[0])
	}
	for _, secret := range []string{planKey, "gh-test-token"} {
		if strings.Contains(got[0], secret) {
			t.Error("the comment holds a secret")
		}
	}

	// A variable missing: the plan step fails, and nothing is posted.
	write("production.yaml", `{"API_HOST": "api.shop.example"}`)
	ran, err = runSteps()
	var se *stepError
	if !errors.As(err, &se) || se.step != "Plan" || !strings.Contains(se.stderr, "cannot be replaced, so nothing was sent") {
		t.Fatalf("with a variable missing: ran %q, err %v", ran, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(comments) != 1 {
		t.Errorf("%d comments posted", len(comments))
	}
}

type stepError struct {
	step           string
	err            error
	stdout, stderr string
}

func (e *stepError) Error() string {
	return "step " + e.step + ": " + e.err.Error() + "\nstdout:\n" + e.stdout + "\nstderr:\n" + e.stderr
}
