package cli_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/cli"
	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

func apiPlanDoc(name string) map[string]any {
	return map[string]any{"apis": map[string]any{name: map[string]any{"display_name": "API " + name,
		"identifier": "https://api.shop.example/" + name, "token_lifetime_seconds": 3600}}}
}

// TestEventsListsThenFollowsAndReconnectsWithoutLosingAnEvent (§19):
// keenauth events prints the latest events oldest first; --follow then
// prints each new one as it comes (--json: one object a line), and when
// the stream is cut it reconnects with the last event's id, so an event
// committed meanwhile is printed once, not lost.
func TestEventsListsThenFollowsAndReconnectsWithoutLosingAnEvent(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	h := &harness{Env: e, URL: srv.URL}
	first := e.Plan(apiPlanDoc("orders"), false)["id"].(string)
	e.Apply(first, nil)

	listed := must(t, h.run(t, "events"))
	lines := strings.Split(strings.TrimSpace(listed.stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "plan.created") || !strings.Contains(lines[1], "plan.applied") ||
		!strings.Contains(lines[1], first) || !strings.Contains(lines[1], "applied") {
		t.Fatalf("keenauth events printed\n%s", listed.stdout)
	}
	if r := h.runWith(t, invocation{env: map[string]string{"KEENAUTH_SECRET_KEY": e.Key("apis:read")}}, "events"); r.code != cli.ExitRefused ||
		!strings.Contains(r.stderr, "config:read") {
		t.Errorf("events without config:read: exit %d\n%s", r.code, r.stderr)
	}
	if r := h.run(t, "events", "--limit", "0"); r.code != cli.ExitUsage {
		t.Errorf("--limit 0: exit %d", r.code)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr apitest.SyncBuffer
	done := make(chan int, 1)
	env := map[string]string{"KEENAUTH_API_URL": srv.URL, "KEENAUTH_SECRET_KEY": e.Secret}
	go func() {
		done <- cli.Run(ctx, []string{"events", "--follow", "--json"}, func(k string) string { return env[k] }, nil, &stdout, &stderr)
	}()
	printed := func() []map[string]any {
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			if l == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("a line that is not a JSON object: %q", l)
			}
			out = append(out, m)
		}
		return out
	}
	waitFor := func(n int) []map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := printed()
			if len(got) >= n {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d events printed within 10 s, want %d:\n%s\nstderr: %s", len(got), n, stdout.String(), stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	got := waitFor(2)
	if got[0]["type"] != "plan.created" || got[1]["type"] != "plan.applied" || got[1]["timestamp"] == nil {
		t.Fatalf("the latest events, oldest first: %v", got)
	}
	// Let the stream open, then an event comes live.
	time.Sleep(300 * time.Millisecond)
	second := e.Plan(apiPlanDoc("users"), false)["id"].(string)
	got = waitFor(3)
	if d, _ := got[2]["data"].(map[string]any); got[2]["type"] != "plan.created" || d["plan_id"] != second {
		t.Fatalf("the live event: %v", got[2])
	}
	// The stream is cut; an event commits before the CLI reconnects.
	srv.CloseClientConnections()
	third := e.Plan(apiPlanDoc("carts"), false)["id"].(string)
	got = waitFor(4)
	if d, _ := got[3]["data"].(map[string]any); d["plan_id"] != third || !config.ValidID(config.PrefixEvent, got[3]["id"].(string)) {
		t.Fatalf("after the reconnection: %v", got[3])
	}
	if !strings.Contains(stderr.String(), "reconnecting") {
		t.Errorf("the reconnection was not announced: %q", stderr.String())
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(printed()); n != 4 {
		t.Fatalf("%d events printed, want 4 (none twice):\n%s", n, stdout.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != cli.ExitInterrupted {
			t.Errorf("interrupted: exit %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("keenauth events --follow did not stop when interrupted")
	}
}
