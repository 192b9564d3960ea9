package e2e_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWebhookOfAKilledReplicaIsTakenOverWithinTheLease (§19): a replica
// that dies (SIGKILL) while it posts an apply's announcement, after the
// apply committed, does not lose it: another replica takes the claim over
// once its 60 s lease passes and delivers it, with the same webhook-id.
func TestWebhookOfAKilledReplicaIsTakenOverWithinTheLease(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a 60 s lease")
	}
	var mu sync.Mutex
	var ids []string
	var times []time.Time
	first := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"plan.applied"`) {
			return
		}
		mu.Lock()
		ids = append(ids, r.Header.Get("webhook-id"))
		times = append(times, time.Now())
		n := len(ids)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release // the first poster dies while it waits
		}
	}))
	defer srv.Close()
	defer close(release)

	c := newCluster(t, 1, "KEENAUTHD_WEBHOOK_ALLOW_HTTP=true", "KEENAUTHD_WEBHOOK_ALLOW_PRIVATE=true")
	a := c.do(c.Nodes[0], "POST", "/v1/webhook-endpoints", map[string]any{"url": srv.URL + "/hook", "events": []string{"plan.applied"}}, "")
	if a.Status != http.StatusCreated {
		t.Fatalf("create endpoint: %d %s", a.Status, a.Body)
	}
	planID := c.plan("orders")
	if a := c.do(c.Nodes[0], "POST", applyPath(planID), nil, ""); a.Status != http.StatusOK {
		t.Fatalf("apply: %d %s", a.Status, a.Body)
	}
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the replica did not post the announcement within 10 s of the commit")
	}
	c.Nodes[0].Kill()
	killed := time.Now()
	c.Nodes = append(c.Nodes, c.start())
	deadline := killed.Add(70 * time.Second)
	for {
		mu.Lock()
		n := len(ids)
		mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the announcement of the killed replica was not taken over within 70 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if ids[1] != ids[0] {
		t.Errorf("the takeover's webhook-id %q, want %q", ids[1], ids[0])
	}
	if d := times[1].Sub(times[0]); d > 61*time.Second {
		t.Errorf("taken over %s after the first claim, over the 60 s lease", d)
	}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n := c.count("SELECT count(*) FROM webhook_deliveries WHERE plan_id = ? AND status = 'succeeded' AND attempts = 1", planID)
		if n == 1 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d deliveries of the apply recorded succeeded at their first recorded attempt, want 1", n)
		}
	}
}
