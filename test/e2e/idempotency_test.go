package e2e_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// evictionWarnings returns the start-up warnings about Redis's eviction
// policy that a process logged so far, with the policy each names.
func evictionWarnings(t *testing.T, n *node) []string {
	t.Helper()
	var out []string
	for _, l := range n.LogLines() {
		if strings.Contains(l.Msg, "maxmemory-policy can evict") {
			if l.Level != "WARN" {
				t.Errorf("eviction warning at level %q", l.Level)
			}
			out = append(out, l.Policy)
		}
	}
	return out
}

// TestSameKeyRacedOnTwoProcessesAppliesOnce sends one apply with one key to
// two keenauthd processes at once, for several plans.
func TestSameKeyRacedOnTwoProcessesAppliesOnce(t *testing.T) {
	c := newCluster(t, 2)
	for i := range 5 {
		id := c.plan("race" + strconv.Itoa(i))
		key := "race-" + strconv.Itoa(i)
		start := make(chan struct{})
		answers := make([]answer, 2)
		var wg sync.WaitGroup
		for j, n := range c.Nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				answers[j] = c.do(n, "POST", applyPath(id), map[string]any{}, key)
			}()
		}
		close(start)
		wg.Wait()
		fresh := 0
		for _, a := range answers {
			switch {
			case a.Status == http.StatusOK && !a.Replayed():
				fresh++
			case a.Status == http.StatusOK, a.Status == http.StatusConflict && a.Code() == "idempotency_key_in_use":
			default:
				t.Fatalf("plan %d: answer %d %s", i, a.Status, a.Body)
			}
		}
		if fresh != 1 {
			t.Fatalf("plan %d: %d first answers, want 1", i, fresh)
		}
		c.appliedOnce(id)
		// Both processes replay it now.
		for _, n := range c.Nodes {
			if a := c.do(n, "POST", applyPath(id), map[string]any{}, key); a.Status != http.StatusOK || !a.Replayed() {
				t.Errorf("plan %d: retry answered %d %s (replayed %v)", i, a.Status, a.Body, a.Replayed())
			}
		}
	}
	// The cluster's own redis-server keeps its default policy; start has
	// waited until each process logged that it listens, after the check.
	if policy := c.Redis.ConfigGet(context.Background(), "maxmemory-policy").Val()["maxmemory-policy"]; policy != "noeviction" {
		t.Fatalf("the cluster's redis-server has maxmemory-policy %q, want noeviction", policy)
	}
	for i, n := range c.Nodes {
		if w := evictionWarnings(t, n); len(w) != 0 {
			t.Errorf("process %d warned about eviction under noeviction: %v", i, w)
		}
	}
}

// TestRetryStormOnTwoProcessesWithFlushDBAppliesOnce: 100 requests of one
// apply with one key over two processes. The first is held inside its
// transaction (the test holds a lock of the environment's row, which the
// apply takes after the plan's) while the Redis database is flushed; it is
// flushed again after the apply.
func TestRetryStormOnTwoProcessesWithFlushDBAppliesOnce(t *testing.T) {
	c := newCluster(t, 2)
	id := c.plan("storm")
	path := applyPath(id)
	ctx := context.Background()

	// NO KEY UPDATE: it holds back the apply's own lock of the row, not the
	// foreign-key checks of the rows written before (a plan's events).
	lock := c.DB.DB.Begin()
	if err := lock.Exec("SELECT id FROM environments WHERE id = ? FOR NO KEY UPDATE", c.EnvID).Error; err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			lock.Rollback()
		}
	}()

	type result struct {
		n int
		a answer
	}
	results := make(chan result, 100)
	go func() { results <- result{0, c.do(c.Nodes[0], "POST", path, map[string]any{}, "storm")} }()
	// Wait until the first request holds the plan and waits for the lock:
	// its transaction claims the plan (no OIDC material), so that it holds
	// the plan's row and the advisory lock of its key's fingerprint.
	deadline := time.Now().Add(20 * time.Second)
	for c.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first apply never claimed the plan")
		}
		time.Sleep(10 * time.Millisecond)
	}

	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		go func() {
			for n := range jobs {
				results <- result{n, c.do(c.Nodes[n%2], "POST", path, map[string]any{}, "storm")}
				wg.Done()
			}
		}()
	}
	defer close(jobs)
	send := func(from, to int) {
		for n := from; n < to; n++ {
			wg.Add(1)
			jobs <- n
		}
		wg.Wait()
	}

	send(1, 21) // the Redis record is in flight
	if err := c.Redis.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	send(21, 41) // no Redis record; the plan is held by the first request's transaction
	if err := lock.Commit().Error; err != nil {
		t.Fatal(err)
	}
	locked = false
	for len(results) < 41 {
		time.Sleep(5 * time.Millisecond) // until the first request has its answer
	}
	send(41, 70)
	if err := c.Redis.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	send(70, 100)
	close(results)

	byN := map[int]answer{}
	for r := range results {
		byN[r.n] = r.a
	}
	if len(byN) != 100 {
		t.Fatalf("%d answers, want 100", len(byN))
	}
	first := byN[0]
	if first.Status != http.StatusOK || first.Replayed() || first.JSON()["status"] != "applied" {
		t.Fatalf("first request: %d %s (replayed %v)", first.Status, first.Body, first.Replayed())
	}
	for n := 1; n < 100; n++ {
		a := byN[n]
		switch {
		case a.Status == http.StatusOK && a.Replayed():
			if !bytes.Equal(a.Body, first.Body) {
				t.Errorf("request %d: body %s\nwant %s", n, a.Body, first.Body)
			}
		case a.Status == http.StatusConflict && a.Code() == "idempotency_key_in_use":
			if ra, err := strconv.Atoi(a.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 2 {
				t.Errorf("request %d: Retry-After %q", n, a.Header.Get("Retry-After"))
			}
		default:
			t.Errorf("request %d: %d %s (replayed %v)", n, a.Status, a.Body, a.Replayed())
		}
		if n <= 40 && a.Code() != "idempotency_key_in_use" {
			t.Errorf("request %d during the apply: %d %s", n, a.Status, a.Body)
		}
	}
	c.appliedOnce(id)
}

// TestStartWarnsWhenRedisCanEvict sets maxmemory-policy on the cluster's
// own redis-server, which no other test sees, before a process starts.
func TestStartWarnsWhenRedisCanEvict(t *testing.T) {
	c := newCluster(t, 0)
	if err := c.Redis.ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatalf("CONFIG SET maxmemory-policy: %v", err)
	}
	n := c.start()

	// start waited for the line logged after the check; poll all the same,
	// so that the test does not rest on the order of the start-up lines.
	var w []string
	deadline := time.Now().Add(30 * time.Second)
	for w = evictionWarnings(t, n); len(w) == 0 && time.Now().Before(deadline); w = evictionWarnings(t, n) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(w) != 1 || w[0] != "allkeys-lru" {
		t.Fatalf("eviction warnings = %v, want one naming allkeys-lru; logs:\n%s", w, n.Logs())
	}
	// The process serves all the same.
	a := c.do(n, "GET", "/readyz", nil, "")
	if a.Status != http.StatusOK {
		t.Fatalf("/readyz: %d %s", a.Status, a.Body)
	}
}
