package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestLogsStayJSONLinesWhileRedisIsDown: with Redis unreachable, go-redis
// reports every failed dial. Those reports go into the process's JSON log
// (at debug level) instead of plain lines on standard error, so every line
// logged is JSON (§11), and the requests are still answered: a plan is
// created with its rate limit failed open, and a keyed request is 503.
func TestLogsStayJSONLinesWhileRedisIsDown(t *testing.T) {
	c := newCluster(t, 1, "KEENAUTHD_REDIS_URL=redis://127.0.0.1:1/0", "KEENAUTHD_LOG_LEVEL=debug")
	n := c.Nodes[0]
	doc := map[string]any{"config": map[string]any{"environment_settings": map[string]any{
		"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 72}}}
	if a := c.do(n, "POST", "/v1/config-plans", doc, ""); a.Status != http.StatusCreated {
		t.Errorf("a plan while Redis is down: %d %s, want 201 (its rate limit fails open)", a.Status, a.Body)
	}
	if a := c.do(n, "POST", "/v1/config-plans", doc, "redis-down-1"); a.Status != http.StatusServiceUnavailable || a.Header.Get("Retry-After") == "" {
		t.Errorf("a keyed plan while Redis is down: %d %s, want 503 with Retry-After", a.Status, a.Body)
	}
	// The log is copied from the process's standard error as it comes: the
	// report is waited for, and only whole lines are read.
	reported := func() bool {
		logs := n.Logs()
		lines := strings.Split(logs, "\n")
		lines = lines[:len(lines)-1] // the last is empty or not whole yet
		found := false
		for _, line := range lines {
			var l struct{ Level, Msg, Detail string }
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatalf("a line logged is not JSON: %q", line)
			}
			if l.Msg == "redis client" && l.Level == "DEBUG" && strings.Contains(l.Detail, "dial") {
				found = true
			}
		}
		return found
	}
	n.WaitFor(t, "the go-redis report of the failed dials in the log", reported)
}
