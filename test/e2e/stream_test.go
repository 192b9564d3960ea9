package e2e_test

import (
	"encoding/json"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/keenauth/configplans/test/apitest"
)

// The live event stream across real keenauthd processes (§19): an event
// committed on one replica reaches a stream on another within 1 s, through
// Redis, and still does by the database poll when Redis is gone; the
// streams' limit holds across replicas; the server's write timeout does not
// cut a stream; a drain ends it.

// planVia creates a plan of one API on n and returns its id.
func (c *cluster) planVia(n *node, name string) string {
	c.t.Helper()
	doc := map[string]any{"apis": map[string]any{name: map[string]any{
		"identifier": "https://api.shop.example/" + name, "display_name": "API " + name, "token_lifetime_seconds": 3600}}}
	a := c.do(n, "POST", "/v1/config-plans", map[string]any{"config": doc}, "")
	if a.Status != http.StatusCreated {
		c.t.Fatalf("create plan: %d %s", a.Status, a.Body)
	}
	return a.JSON()["id"].(string)
}

// reaches creates a plan on from and fails t unless its plan.created
// reaches s within bound; it returns how long it took.
func (c *cluster) reaches(from *node, s *apitest.Stream, name string, bound time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	id := c.planVia(from, name)
	for {
		ev := s.NextEvent(c.t, 5*time.Second)
		var data struct {
			PlanID string `json:"plan_id"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &data); err != nil {
			c.t.Fatalf("data %q: %v", ev.Data, err)
		}
		if ev.Event == "plan.created" && data.PlanID == id {
			took := time.Since(start)
			if took > bound {
				c.t.Errorf("the plan.created of %s reached the other replica's stream after %s; the bound is %s", id, took, bound)
			}
			return took
		}
	}
}

func TestStreamOfAReplicaGetsTheEventsOfAnotherWithinASecondEvenWithoutRedis(t *testing.T) {
	// A write timeout far shorter than the test: it must not cut the stream.
	c := newCluster(t, 2, "KEENAUTHD_WRITE_TIMEOUT=1s", "KEENAUTHD_STREAM_HEARTBEAT=300ms")
	a, b := c.Nodes[0], c.Nodes[1]
	s := apitest.OpenStream(t, b.URL, c.Secret, "")
	if s.Resp.StatusCode != http.StatusOK || s.Resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %v", s.Resp.StatusCode, s.Resp.Header)
	}
	for i := range 5 {
		took := c.reaches(a, s, "orders"+string(rune('a'+i)), time.Second)
		t.Logf("through Redis: %s", took)
	}
	// Past the write timeout, the stream still carries heartbeats and events.
	time.Sleep(1500 * time.Millisecond)
	if it, ok := s.Next(2 * time.Second); !ok {
		t.Fatal("the stream ended past the server's write timeout")
	} else if it.Comment == "" {
		t.Fatalf("an event %+v where a heartbeat was expected", it)
	}

	// Redis is gone: the wake-ups are lost, the 1 s poll delivers.
	c.RedisServer.Kill()
	for i := range 3 {
		took := c.reaches(a, s, "users"+string(rune('a'+i)), 1500*time.Millisecond)
		t.Logf("without Redis: %s", took)
	}

	// A drain ends the stream: the process exits well within its
	// shutdown timeout.
	stopped := time.Now()
	b.Stop(t, syscall.SIGTERM)
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("keenauthd took %s to stop with a stream open", took)
	}
}

func TestStreamsOfAnEnvironmentAreLimitedAcrossReplicas(t *testing.T) {
	c := newCluster(t, 2)
	a, b := c.Nodes[0], c.Nodes[1]
	var open []*apitest.Stream
	for i := range 10 {
		n := a
		if i%2 == 1 {
			n = b
		}
		s := apitest.OpenStream(t, n.URL, c.Secret, "")
		if s.Resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d", i+1, s.Resp.StatusCode)
		}
		open = append(open, s)
	}
	for _, n := range []*node{a, b} {
		s := apitest.OpenStream(t, n.URL, c.Secret, "")
		if s.Resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("an 11th stream: %d", s.Resp.StatusCode)
		}
		var p map[string]any
		_ = json.NewDecoder(s.Resp.Body).Decode(&p)
		if p["policy"] != "config_events_stream" {
			t.Fatalf("the 11th stream's problem: %v", p)
		}
		s.Close()
	}
	open[0].Close() // a's: b may open one now
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := apitest.OpenStream(t, b.URL, c.Secret, "")
		if s.Resp.StatusCode == http.StatusOK {
			break
		}
		s.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's place was not freed: %d", s.Resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
