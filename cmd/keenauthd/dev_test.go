package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// devProcess is a `keenauthd dev` running in the test's process.
type devProcess struct {
	cancel context.CancelFunc
	done   chan error
	// From the banner.
	addr, envID, secret string
	banner              string
}

var (
	bannerAddr    = regexp.MustCompile(`(?m)^listening on (\S+)$`)
	bannerEnv     = regexp.MustCompile(`(?m)^environment: (env_\S+) "dev" \((created|reused)\)$`)
	bannerSecret  = regexp.MustCompile(`(?m)^export KEENAUTH_SECRET_KEY=(ksk_\S+)$`)
	bannerURL     = regexp.MustCompile(`(?m)^export KEENAUTH_API_URL=http://(\S+)$`)
	bannerConsole = regexp.MustCompile(`(?m)^console: +http://(\S+)/console/ `)
)

// startDev runs `keenauthd dev` over dataDir and waits for its banner.
func startDev(t *testing.T, dataDir string) *devProcess {
	t.Helper()
	return startDevWith(t, map[string]string{"KEENAUTHD_SHUTDOWN_TIMEOUT": "5s"}, "--data", dataDir)
}

// startDevWith runs `keenauthd dev --listen 127.0.0.1:0 args…` with the
// variables of env and waits for its banner.
func startDevWith(t *testing.T, env map[string]string, args ...string) *devProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	d := &devProcess{cancel: cancel, done: make(chan error, 1)}
	args = append([]string{"dev", "--listen", "127.0.0.1:0"}, args...)
	go func() {
		err := run(ctx, args, func(k string) string { return env[k] }, pw, io.Discard)
		pw.CloseWithError(io.EOF)
		d.done <- err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-d.done:
		case <-time.After(30 * time.Second):
			t.Error("keenauthd dev did not stop")
		}
	})
	var banner strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		banner.WriteString(sc.Text() + "\n")
		if bannerSecret.MatchString(banner.String()) {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	d.banner = banner.String()
	m := bannerAddr.FindStringSubmatch(d.banner)
	e := bannerEnv.FindStringSubmatch(d.banner)
	s := bannerSecret.FindStringSubmatch(d.banner)
	if m == nil || e == nil || s == nil {
		cancel()
		t.Fatalf("keenauthd dev printed no address, environment or key (run: %v):\n%s", <-d.done, d.banner)
	}
	if u := bannerURL.FindStringSubmatch(d.banner); u == nil || u[1] != m[1] {
		t.Errorf("the export KEENAUTH_API_URL line does not name %s:\n%s", m[1], d.banner)
	}
	if u := bannerConsole.FindStringSubmatch(d.banner); u == nil || u[1] != m[1] {
		t.Errorf("the banner does not print the console's URL http://%s/console/:\n%s", m[1], d.banner)
	}
	d.addr, d.envID, d.secret = m[1], e[1], s[1]
	return d
}

// stop cancels the process's context and returns what run returned.
func (d *devProcess) stop(t *testing.T) error {
	t.Helper()
	d.cancel()
	select {
	case err := <-d.done:
		d.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("keenauthd dev did not stop within 30s of its context's cancellation")
		return nil
	}
}

// call sends one request to the dev server and decodes its JSON answer.
func (d *devProcess) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+d.addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

func TestDevExportPlanApplyAndRevisionsOverHTTP(t *testing.T) {
	t.Parallel()
	d := startDev(t, t.TempDir())
	if !strings.Contains(d.banner, "(created)") {
		t.Errorf("first start did not create the dev environment:\n%s", d.banner)
	}
	// The banner's console URL serves the console, and the server's address
	// leads a browser there.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]int{"/console/": http.StatusOK, "/": http.StatusFound} {
		resp, err := noFollow.Get("http://" + d.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusFound && resp.Header.Get("Location") != "/console/") {
			t.Errorf("GET %s: %d Location %q, want %d", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}

	status, export := d.call(t, "GET", "/v1/config", nil)
	if status != http.StatusOK {
		t.Fatalf("export: %d %v", status, export)
	}
	cfg := export["config"].(map[string]any)
	if got := cfg["environment_settings"].(map[string]any)["display_name"]; got != "dev" {
		t.Fatalf("a new environment's display_name = %v, want dev", got)
	}

	doc := map[string]any{
		"apis": map[string]any{"orders": map[string]any{"identifier": "https://api.shop.example/orders", "display_name": "Orders",
			"scopes": []any{map[string]any{"value": "read:orders"}}, "token_lifetime_seconds": 3600}},
		"connections": map[string]any{"acme-sso": map[string]any{"type": "enterprise", "display_name": "ACME", "active": false,
			"oidc": map[string]any{"issuer": "https://idp.acme.example", "client_id": "abc", "scopes": []any{"openid"}}}},
	}
	status, plan := d.call(t, "POST", "/v1/config-plans", map[string]any{"config": doc})
	if status != http.StatusCreated {
		t.Fatalf("plan: %d %v", status, plan)
	}
	if sum := plan["summary"].(map[string]any); sum["create"] != 2.0 {
		t.Fatalf("summary = %v, want 2 creates", sum)
	}
	status, applied := d.call(t, "POST", "/v1/config-plans/"+plan["id"].(string)+":apply", map[string]any{
		"resolved_secrets": map[string]any{"KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET": "s3cret"},
		"sp_host":          "login.shop.example",
	})
	if status != http.StatusOK || applied["status"] != "applied" {
		t.Fatalf("apply: %d %v", status, applied)
	}
	revID, _ := applied["revision_id"].(string)
	if !strings.HasPrefix(revID, "cfgr_") {
		t.Fatalf("applied plan's revision_id = %v", applied["revision_id"])
	}

	status, list := d.call(t, "GET", "/v1/config-revisions", nil)
	if status != http.StatusOK {
		t.Fatalf("list revisions: %d %v", status, list)
	}
	if data := list["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != revID {
		t.Fatalf("revisions = %v, want only %s", data, revID)
	}
	status, rev := d.call(t, "GET", "/v1/config-revisions/"+revID, nil)
	if status != http.StatusOK {
		t.Fatalf("get revision: %d %v", status, rev)
	}
	if res := rev["resources"].([]any); len(res) != 2 {
		t.Fatalf("revision resources = %v, want the 2 created", res)
	}

	// Planning the export again changes nothing: the stored state round-trips.
	_, export = d.call(t, "GET", "/v1/config", nil)
	status, again := d.call(t, "POST", "/v1/config-plans", map[string]any{"config": export["config"]})
	if status != http.StatusCreated {
		t.Fatalf("re-plan: %d %v", status, again)
	}
	if sum := again["summary"].(map[string]any); sum["create"] != 0.0 || sum["update"] != 0.0 || sum["delete"] != 0.0 {
		t.Fatalf("re-plan of the export = %v, want only no_op", sum)
	}

	for path, want := range map[string]string{
		"/readyz":  `"status":"ready"`,
		"/metrics": `keenauthd_applies_total{code="applied",mode="apply"} 1`,
	} {
		resp, err := http.Get("http://" + d.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, want 200 with %s:\n%.2000s", path, resp.StatusCode, want, body)
		}
	}

	if err := d.stop(t); err != nil {
		t.Fatalf("shutdown: run returned %v, want nil", err)
	}
	if _, err := http.Get("http://" + d.addr + "/healthz"); err == nil {
		t.Fatal("the server still answers after shutdown")
	}
}

func TestDevSecondStartOnTheSameDataFailsWhileTheFirstRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startDev(t, dir)

	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, []string{"dev", "--data", dir, "--listen", "127.0.0.1:0"}, func(string) string { return "" }, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "in use by another keenauthd dev") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second start: %v, want an error naming %s as in use", err, dir)
	}
	if out.Len() != 0 {
		t.Errorf("the refused start printed:\n%s", out.String())
	}
	if status, _ := first.call(t, "GET", "/v1/config", nil); status != http.StatusOK {
		t.Fatalf("the first dev after the refused start: %d", status)
	}
}

// acmeDoc is an enterprise connection with OIDC material, and its apply body.
var (
	acmeDoc = map[string]any{"connections": map[string]any{"acme-sso": map[string]any{"type": "enterprise", "display_name": "ACME",
		"active": false, "oidc": map[string]any{"issuer": "https://idp.acme.example", "client_id": "abc", "scopes": []any{"openid"}}}}}
	acmeSecrets = map[string]any{"resolved_secrets": map[string]any{"KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET": "s3cret"},
		"sp_host": "login.shop.example"}
)

func TestDevRestartReusesTheEnvironmentWithANewKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startDev(t, dir)
	for _, step := range []struct{ doc, body map[string]any }{
		{map[string]any{"roles": map[string]any{"admin": map[string]any{"display_name": "Admin"}}}, map[string]any{}},
		{acmeDoc, acmeSecrets},
	} {
		status, plan := first.call(t, "POST", "/v1/config-plans", map[string]any{"config": step.doc})
		if status != http.StatusCreated {
			t.Fatalf("plan: %d %v", status, plan)
		}
		if status, applied := first.call(t, "POST", "/v1/config-plans/"+plan["id"].(string)+":apply", step.body); status != http.StatusOK {
			t.Fatalf("apply: %d %v", status, applied)
		}
	}
	if status, tested := first.call(t, "POST", "/v1/connections/acme-sso:test", nil); status != http.StatusOK || tested["status"] != "succeeded" {
		t.Fatalf("connection test: %d %v", status, tested)
	}
	if err := first.stop(t); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	second := startDev(t, dir)
	if second.envID != first.envID || !strings.Contains(second.banner, "(reused)") {
		t.Fatalf("restart environment = %s, want %s reused:\n%s", second.envID, first.envID, second.banner)
	}
	if second.secret == first.secret {
		t.Fatal("restart printed the same key secret")
	}
	status, export := second.call(t, "GET", "/v1/config?types=role", nil)
	if status != http.StatusOK {
		t.Fatalf("export: %d %v", status, export)
	}
	if _, ok := export["config"].(map[string]any)["roles"].(map[string]any)["admin"]; !ok {
		t.Fatalf("the role applied before the restart is gone: %v", export)
	}
	// The federation stand-in lost the material with the process: the
	// connection cannot be tested, and a plan of the same document writes
	// the material again.
	if status, tested := second.call(t, "POST", "/v1/connections/acme-sso:test", nil); status != http.StatusConflict || tested["code"] != "connection_not_testable" {
		t.Fatalf("connection test after a restart: %d %v, want 409 connection_not_testable", status, tested)
	}
	status, plan := second.call(t, "POST", "/v1/config-plans", map[string]any{"config": acmeDoc})
	if status != http.StatusCreated {
		t.Fatalf("plan: %d %v", status, plan)
	}
	if c := plan["changes"].([]any)[0].(map[string]any); c["action"] != "update" || c["requires_secret"] != true {
		t.Fatalf("re-plan of the connection after a restart = %v, want an update that writes the material", c)
	}
	if status, applied := second.call(t, "POST", "/v1/config-plans/"+plan["id"].(string)+":apply", acmeSecrets); status != http.StatusOK {
		t.Fatalf("apply: %d %v", status, applied)
	}
	if status, tested := second.call(t, "POST", "/v1/connections/acme-sso:test", nil); status != http.StatusOK || tested["status"] != "succeeded" {
		t.Fatalf("connection test after the material was written again: %d %v", status, tested)
	}

	// The first key was not revoked: it works against the same data.
	first.addr = second.addr
	if status, _ := first.call(t, "GET", "/v1/config?types=role", nil); status != http.StatusOK {
		t.Fatalf("the first start's key after a restart: %d", status)
	}
}

// TestDevFailedStartLeavesNoTemporaryDirectory: without --data, a start
// that fails (its address is taken) removes the temporary directory it
// made; a start that printed its banner keeps it, as the banner says.
func TestDevFailedStartLeavesNoTemporaryDirectory(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	var out bytes.Buffer
	err = run(context.Background(), []string{"dev", "--listen", taken.Addr().String()}, func(string) string { return "" }, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("start on a taken address: %v, want address already in use", err)
	}
	if out.Len() != 0 {
		t.Errorf("the failed start printed:\n%s", out.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("the failed start left %v in TMPDIR", names(left))
	}

	// The same TMPDIR, a start that serves: its directory stays.
	d := startDevWith(t, nil)
	if err := d.stop(t); err != nil {
		t.Fatalf("dev: %v\n%s", err, d.banner)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 1 || !strings.HasPrefix(left[0].Name(), "keenauthd-dev-") ||
		!strings.Contains(d.banner, "data:        "+filepath.Join(tmp, left[0].Name())+" ") {
		t.Fatalf("after a start that served, TMPDIR holds %v; banner:\n%s", names(left), d.banner)
	}
}

func names(entries []os.DirEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
