package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/keenauth/configplans/test/apitest"
)

// TestStreamSlotsOfAKilledReplicaLapseWithTheirLease (§19, at most 10
// streams per environment): the limit is held by leases in Redis. A replica
// that dies holding every slot (SIGKILL: it releases nothing) keeps the
// other replica refusing an 11th stream with 429 until the leases lapse;
// then that replica admits streams again, up to the whole limit and no
// further. The lease is shortened with KEENAUTHD_STREAM_LEASE.
func TestStreamSlotsOfAKilledReplicaLapseWithTheirLease(t *testing.T) {
	const lease = 5 * time.Second // renewed every third of it: at a kill, at least ~3.3 s of it are left
	c := newCluster(t, 2, "KEENAUTHD_STREAM_LEASE="+lease.String())
	a, b := c.Nodes[0], c.Nodes[1]
	for i := range 10 {
		s := apitest.OpenStream(t, a.URL, c.Secret, "")
		if s.Resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d on A: %d", i+1, s.Resp.StatusCode)
		}
		t.Cleanup(s.Close)
	}
	// refused opens an 11th stream on b and fails t unless it is refused
	// by the streams' limit, with a retry within the lease.
	refused := func(when string) {
		t.Helper()
		s := apitest.OpenStream(t, b.URL, c.Secret, "")
		defer s.Close()
		if s.Resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%s: an 11th stream on B: %d, want 429", when, s.Resp.StatusCode)
		}
		var p map[string]any
		if err := json.NewDecoder(s.Resp.Body).Decode(&p); err != nil {
			t.Fatalf("%s: the 429's problem: %v", when, err)
		}
		ra, _ := strconv.Atoi(s.Resp.Header.Get("Retry-After"))
		if p["policy"] != "config_events_stream" || ra < 1 || ra > int(lease/time.Second) {
			t.Fatalf("%s: the 429: Retry-After %q, problem %v; want policy config_events_stream and a retry within the %s lease",
				when, s.Resp.Header.Get("Retry-After"), p, lease)
		}
	}
	refused("A alive")

	a.Kill() // SIGKILL: A's slots stay in Redis until their leases lapse
	killed := time.Now()
	refused("right after A was killed")
	// The leases as Redis holds them: ten, the first to lapse no sooner
	// than lapses below.
	ctx := context.Background()
	keys, err := c.Redis.Keys(ctx, "*config-events-streams").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("the streams' slots in Redis: %v %v", keys, err)
	}
	leases, err := c.Redis.ZRangeWithScores(ctx, keys[0], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	now, err := c.Redis.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	read := time.Now()
	if len(leases) != 10 {
		t.Fatalf("%d stream slots in Redis after A was killed, want its 10", len(leases))
	}
	lapses := read.Add(time.UnixMicro(int64(leases[0].Score)).Sub(now))

	// B admits streams again once the leases have lapsed: all ten of the
	// limit (every slot of A is free), then refuses the 11th.
	deadline := killed.Add(lease + 5*time.Second)
	var firstAdmitted time.Duration
	var firstAt time.Time
	open := 0
	for open < 10 {
		s := apitest.OpenStream(t, b.URL, c.Secret, "")
		switch s.Resp.StatusCode {
		case http.StatusOK:
			if open == 0 {
				firstAt = time.Now()
				firstAdmitted = firstAt.Sub(killed)
			}
			open++
			t.Cleanup(s.Close)
			continue
		case http.StatusTooManyRequests:
			s.Close()
		default:
			s.Close()
			t.Fatalf("a stream on B after A was killed: %d", s.Resp.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after A was killed, B admitted only %d streams; the lease is %s", time.Since(killed).Round(time.Millisecond), open, lease)
		}
		time.Sleep(50 * time.Millisecond)
	}
	all := time.Since(killed)
	t.Logf("after the kill: the first lease lapsed after %s; B admitted a first stream after %s, ten after %s (lease %s)",
		lapses.Sub(killed).Round(time.Millisecond), firstAdmitted.Round(time.Millisecond), all.Round(time.Millisecond), lease)
	// Not before the first of A's leases lapsed (50 ms for the clocks'
	// reading apart).
	if firstAt.Before(lapses.Add(-50 * time.Millisecond)) {
		t.Errorf("B admitted a stream %s before the first of A's leases lapsed", lapses.Sub(firstAt))
	}
	refused("ten streams open on B")
}
