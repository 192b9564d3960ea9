package cli_test

import (
	"crypto/rand"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

const acmeSecret = "KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET"

// changeOf returns the change of kind/key in a plan answer.
func changeOf(t *testing.T, p map[string]any, kind, key string) map[string]any {
	t.Helper()
	for _, c := range p["changes"].([]any) {
		m := c.(map[string]any)
		if m["kind"] == kind && m["key"] == key {
			return m
		}
	}
	t.Fatalf("no change of %s/%s in %v", kind, key, p["changes"])
	return nil
}

func TestSecretsFromEnvReachTheFederationServiceAndNeverTheOutput(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	canary := "canary-" + rand.Text()
	env := invocation{env: map[string]string{acmeSecret: canary}}
	var runs []result
	run := func(inv invocation, args ...string) result {
		r := h.runWith(t, inv, args...)
		runs = append(runs, r)
		return r
	}

	doc := writeJSON(t, "doc.json", exampleWithDeletion())
	id := must(t, run(env, "config", "plan", "-f", doc, "--json")).JSON(t)["id"].(string)
	// Refused applies that carried the secret: no host, then an unknown
	// deletion, in human and JSON output.
	wantExit(t, run(env, "config", "apply", id, "--secrets-from-env", "--confirm-deletion", "connection/legacy"), 1)
	wantExit(t, run(env, "config", "apply", id, "--secrets-from-env", "--sp-host", "login.shop.example",
		"--confirm-deletion", "connection/nope", "--json"), 1)
	wantExit(t, run(env, "config", "apply", id, "--secrets-from-env", "--sp-host", "login.shop.example", "--validate-only"), 1)
	applied := must(t, run(env, "config", "apply", id, "--secrets-from-env", "--sp-host", "login.shop.example",
		"--confirm-deletion", "connection/legacy", "--json")).JSON(t)
	must(t, run(env, "config", "show", id))
	must(t, run(env, "logs", "--json"))
	must(t, run(env, "revisions", "show", h.latestRevisionID(t), "--json"))

	conID, _ := changeOf(t, applied, "connection", "acme-sso")["resource_id"].(string)
	if conID == "" {
		t.Fatalf("applied plan has no connection id: %v", applied)
	}
	if got := h.Fed.SecretOf(h.EnvID, conID); got != canary {
		t.Fatalf("the federation service holds %q, want the canary", got)
	}
	for _, r := range runs {
		if strings.Contains(r.output(), canary) {
			t.Errorf("keenauth %s printed the secret:\n%s", strings.Join(r.args, " "), r.output())
		}
	}
	if strings.Contains(h.Logs.String(), canary) {
		t.Errorf("the server logged the secret")
	}
}

func TestMissingSecretVariablesAreNamedBeforeAnyApplyRequest(t *testing.T) {
	t.Parallel()
	h := setup(t)
	var mu sync.Mutex
	var applies int
	front := h.frontServer(t, func(w http.ResponseWriter, r *http.Request, forward func()) {
		if strings.HasSuffix(r.URL.Path, ":apply") {
			mu.Lock()
			applies++
			mu.Unlock()
		}
		forward()
	})
	id := h.Plan(exampleNeedingSecret(), false)["id"].(string)

	for name, env := range map[string]map[string]string{
		"unset": {"KEENAUTH_API_URL": front},
		"empty": {"KEENAUTH_API_URL": front, acmeSecret: ""},
	} {
		r := h.runWith(t, invocation{env: env}, "config", "apply", id, "--secrets-from-env", "--sp-host", "login.shop.example")
		wantExit(t, r, 2)
		want := "Error: missing environment variable(s) for the secrets plan " + id + " needs: " + acmeSecret + "; nothing was sent.\n"
		if r.stderr != want {
			t.Errorf("%s: stderr\n%q\nwant\n%q", name, r.stderr, want)
		}
		if r.stdout != "" {
			t.Errorf("%s: stdout %q", name, r.stdout)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if applies != 0 {
		t.Errorf("%d apply requests were sent", applies)
	}
	events := h.Do(apitestGet("/v1/config-plans/" + id + "/events")).JSON()["data"].([]any)
	if len(events) != 1 || events[0].(map[string]any)["type"] != "plan_created" {
		t.Errorf("plan events = %v", events)
	}
}

// exampleNeedingSecret is the §4 document without the deletion of
// "legacy": it needs the acme-sso secret and a host.
func exampleNeedingSecret() map[string]any {
	doc := exampleWithDeletion()
	delete(doc["connections"].(map[string]any), "legacy")
	return doc
}

// attempts records the apply requests a front server saw.
type attempts struct {
	mu   sync.Mutex
	keys []string
	at   []time.Time
}

func (a *attempts) add(r *http.Request) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys = append(a.keys, r.Header.Get("Idempotency-Key"))
	a.at = append(a.at, time.Now())
	return len(a.keys)
}

func (a *attempts) snapshot() ([]string, []time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.keys...), append([]time.Time(nil), a.at...)
}

func TestApplyRetriesA429WithTheSameIdempotencyKey(t *testing.T) {
	t.Parallel()
	for name, tty := range map[string]bool{"not a terminal": false, "terminal": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			seen := &attempts{}
			front := h.frontServer(t, func(w http.ResponseWriter, r *http.Request, forward func()) {
				if !strings.HasSuffix(r.URL.Path, ":apply") || seen.add(r) > 1 {
					forward()
					return
				}
				w.Header().Set("Content-Type", "application/problem+json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"type":"https://docs.keenauth.dev/errors/rate_limited","title":"Rate limited","status":429,` +
					`"code":"rate_limited","detail":"the config_plan limit of this environment is reached; retry in 1 s",` +
					`"errors":[],"retry_after":1,"policy":"config_plan","request_id":"req_01m8mq5b1ad6hgqjkk52xncant"}`))
			})
			id := h.Plan(map[string]any{"apis": exampleNeedingSecret()["apis"]}, false)["id"].(string)

			r := must(t, h.runWith(t, invocation{env: map[string]string{"KEENAUTH_API_URL": front}, stderrTTY: tty},
				"config", "apply", id, "--json"))
			if st := r.JSON(t)["status"]; st != "applied" {
				t.Fatalf("status = %v", st)
			}
			keys, at := seen.snapshot()
			if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
				t.Fatalf("Idempotency-Keys sent: %q", keys)
			}
			if gap := at[1].Sub(at[0]); gap < time.Second {
				t.Errorf("retried after %v, before the Retry-After of 1 s", gap)
			}
			keyLine := "Idempotency-Key: " + keys[0] + " (to retry this apply by hand: --idempotency-key " + keys[0] + ")\n"
			if !strings.HasPrefix(r.stderr, keyLine) {
				t.Errorf("stderr does not start with the generated key:\n%q", r.stderr)
			}
			// The retry is announced, on a terminal or not (a CI log).
			retryLine := "keenauth: rate limited (config_plan); retrying in 1s (attempt 2; --retry-for 30s, "
			if rest, ok := strings.CutPrefix(r.stderr, keyLine+retryLine); !ok || strings.Count(rest, "\n") != 1 || strings.Contains(rest, "\x1b") {
				t.Errorf("stderr is not the key and one announcement of the retry:\n%q", r.stderr)
			}
		})
	}
}

func TestApplyRetriesANetworkFailureWithTheSameKey(t *testing.T) {
	t.Parallel()
	h := setup(t)
	seen := &attempts{}
	front := h.frontServer(t, func(w http.ResponseWriter, r *http.Request, forward func()) {
		if !strings.HasSuffix(r.URL.Path, ":apply") || seen.add(r) > 1 {
			forward()
			return
		}
		// The connection drops before any answer.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	id := h.Plan(map[string]any{"apis": exampleNeedingSecret()["apis"]}, false)["id"].(string)
	r := must(t, h.runWith(t, invocation{env: map[string]string{"KEENAUTH_API_URL": front}},
		"config", "apply", id, "--idempotency-key", "deploy-4711"))
	keys, _ := seen.snapshot()
	if len(keys) != 2 || keys[0] != "deploy-4711" || keys[1] != "deploy-4711" {
		t.Fatalf("Idempotency-Keys sent: %q", keys)
	}
	// A given key is not printed again; the retry is announced.
	if !strings.HasPrefix(r.stderr, "keenauth: no answer from the API (") || !strings.Contains(r.stderr, "); retrying in 1s (attempt 2;") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q", r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "Applied plan "+id) {
		t.Errorf("stdout: %s", r.stdout)
	}
	// The same key again: the stored answer, said so.
	again := must(t, h.run(t, "config", "apply", id, "--idempotency-key", "deploy-4711"))
	if !strings.HasPrefix(again.stdout, "Plan "+id+" was already applied with this Idempotency-Key; this is the stored answer.\n") {
		t.Errorf("replay: %s", again.stdout)
	}
}

func TestApplyGivesUpWhenRetryForIsSpent(t *testing.T) {
	t.Parallel()
	h := setup(t)
	seen := &attempts{}
	front := h.frontServer(t, func(w http.ResponseWriter, r *http.Request, forward func()) {
		if !strings.HasSuffix(r.URL.Path, ":apply") {
			forward()
			return
		}
		seen.add(r)
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":503,"title":"Service unavailable","code":"service_unavailable",` +
			`"detail":"the fleet's apply capacity is saturated; nothing was written","errors":[],"retry_after":1}`))
	})
	id := h.Plan(map[string]any{"apis": exampleNeedingSecret()["apis"]}, false)["id"].(string)
	r := h.runWith(t, invocation{env: map[string]string{"KEENAUTH_API_URL": front}}, "config", "apply", id, "--retry-for", "1500ms")
	wantExit(t, r, 4)
	keys, _ := seen.snapshot()
	if len(keys) != 2 || keys[0] != keys[1] {
		t.Errorf("Idempotency-Keys sent: %q", keys)
	}
	for _, want := range []string{"Error: Service unavailable: the fleet's apply capacity is saturated; nothing was written.\n",
		"  gave up after 2 attempts in ", "(HTTP 503 service_unavailable)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	// No server at all, no retry: exit 1.
	closed := closedURL(t)
	r = h.runWith(t, invocation{env: map[string]string{"KEENAUTH_API_URL": closed}}, "config", "apply", id, "--retry-for", "0")
	wantExit(t, r, 1)
	if strings.Contains(r.stderr, "retrying") {
		t.Errorf("--retry-for 0 retried: %s", r.stderr)
	}
	if !strings.Contains(r.stderr, "Error: cannot reach the API at "+closed+": ") {
		t.Errorf("stderr: %s", r.stderr)
	}
	if st := h.Do(apitestGet("/v1/config-plans/" + id)).JSON()["status"]; st != "planned" {
		t.Errorf("plan status = %v", st)
	}
}
