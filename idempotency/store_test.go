package idempotency

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/keenauth/configplans/test/testdb"
)

// storeHarness is one Store under test and how time passes for it: sleeping
// for Redis, advancing the injected clock for the memory store.
type storeHarness struct {
	Store
	wait func(time.Duration)
}

// testStore runs the behaviour every Store must have; the Redis and memory
// implementations both pass it.
func testStore(t *testing.T, newStore func(t *testing.T) storeHarness) {
	t.Helper()
	const lease = 300 * time.Millisecond
	ok := Response{
		Status: 201,
		Header: map[string]string{"Content-Type": "application/json", "Location": "/v1/config-plans/cfgp_1"},
		Body:   []byte(`{"id":"cfgp_1","object":"config_plan"}`),
	}

	t.Run("claimInUseCompleteReplay", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		first := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if first.Outcome != Claimed || len(first.Token) != 32 {
			t.Fatalf("first claim = %+v, want Claimed with a 32-hex token", first)
		}

		second := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if second.Outcome != InUse || second.RetryAfter != time.Second {
			t.Fatalf("claim while running = %+v, want InUse with RetryAfter 1s", second)
		}

		if err := s.Complete(ctx, "key_a", "k1", first.Token, ok, DefaultRetention); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		s.wait(lease + 100*time.Millisecond) // a finished record outlives the lease
		for range 2 {
			got := mustClaim(t, s, "key_a", "k1", "fp1", lease)
			want := ClaimResult{Outcome: Replay, Response: &ok}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("claim after completion (-want +got):\n%s", diff)
			}
		}
	})

	t.Run("replayEmptyBodyAndNoHeaders", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if err := s.Complete(ctx, "key_a", "k1", c.Token, Response{Status: 204}, DefaultRetention); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		got := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		want := ClaimResult{Outcome: Replay, Response: &Response{Status: 204}}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("replay (-want +got):\n%s", diff)
		}
	})

	t.Run("mismatchInFlight", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if got := mustClaim(t, s, "key_a", "k1", "fp2", lease); got.Outcome != Mismatch {
			t.Fatalf("claim with another fingerprint while running = %+v, want Mismatch", got)
		}
	})

	t.Run("mismatchFinished", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if err := s.Complete(context.Background(), "key_a", "k1", c.Token, ok, DefaultRetention); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if got := mustClaim(t, s, "key_a", "k1", "fp2", lease); got.Outcome != Mismatch {
			t.Fatalf("claim with another fingerprint when finished = %+v, want Mismatch", got)
		}
	})

	t.Run("scopesAndKeysAreSeparate", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		mustClaim(t, s, "key_a", "k1", "fp1", lease)
		for _, sk := range [][2]string{{"key_b", "k1"}, {"key_a", "k2"}, {"key_a", "K1"}} {
			if got := mustClaim(t, s, sk[0], sk[1], "fp1", lease); got.Outcome != Claimed {
				t.Errorf("claim of scope %q key %q = %v, want Claimed", sk[0], sk[1], got.Outcome)
			}
		}
	})

	t.Run("wrongTokenRefused", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		wrong := newToken()
		if err := s.Renew(ctx, "key_a", "k1", wrong, lease); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Renew with a wrong token: %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, "key_a", "k1", wrong, ok, DefaultRetention); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Complete with a wrong token: %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx, "key_a", "k1", wrong); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Release with a wrong token: %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx, "key_a", "k1", ""); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Release with an empty token: %v, want ErrLeaseLost", err)
		}
		// The owner is unaffected.
		if got := mustClaim(t, s, "key_a", "k1", "fp1", lease); got.Outcome != InUse {
			t.Errorf("claim after refused operations = %v, want InUse", got.Outcome)
		}
		if err := s.Complete(ctx, "key_a", "k1", c.Token, ok, DefaultRetention); err != nil {
			t.Errorf("Complete by the owner: %v", err)
		}
	})

	t.Run("finishedRecordHasNoOwner", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if err := s.Complete(ctx, "key_a", "k1", c.Token, ok, DefaultRetention); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if err := s.Renew(ctx, "key_a", "k1", c.Token, lease); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Renew after Complete: %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, "key_a", "k1", c.Token, Response{Status: 500}, DefaultRetention); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("second Complete: %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx, "key_a", "k1", c.Token); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Release after Complete: %v, want ErrLeaseLost", err)
		}
		if got := mustClaim(t, s, "key_a", "k1", "fp1", lease); got.Outcome != Replay || got.Response.Status != 201 {
			t.Errorf("claim = %+v, want the first response replayed", got)
		}
	})

	t.Run("releaseLetsTheRetryRun", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if err := s.Release(ctx, "key_a", "k1", c.Token); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := s.Release(ctx, "key_a", "k1", c.Token); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("second Release: %v, want ErrLeaseLost", err)
		}
		// A retry may even carry another body: the key is free again.
		again := mustClaim(t, s, "key_a", "k1", "fp2", lease)
		if again.Outcome != Claimed || again.Token == c.Token {
			t.Fatalf("claim after release = %+v, want Claimed with a new token", again)
		}
	})

	t.Run("leaseExpiryLetsANewClaimWin", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		old := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		s.wait(lease + 100*time.Millisecond)
		retry := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if retry.Outcome != Claimed {
			t.Fatalf("claim after the lease passed = %+v, want Claimed", retry)
		}
		// The crashed owner, come back, may no longer touch the record.
		if err := s.Renew(ctx, "key_a", "k1", old.Token, lease); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Renew by the old owner: %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, "key_a", "k1", old.Token, ok, DefaultRetention); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Complete by the old owner: %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx, "key_a", "k1", old.Token); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Release by the old owner: %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, "key_a", "k1", retry.Token, ok, DefaultRetention); err != nil {
			t.Errorf("Complete by the new owner: %v", err)
		}
	})

	t.Run("renewKeepsTheLease", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		for range 3 {
			s.wait(lease / 2)
			if err := s.Renew(ctx, "key_a", "k1", c.Token, lease); err != nil {
				t.Fatalf("Renew: %v", err)
			}
		}
		if got := mustClaim(t, s, "key_a", "k1", "fp1", lease); got.Outcome != InUse {
			t.Fatalf("claim after 1.5 leases of renewals = %v, want InUse", got.Outcome)
		}
	})

	t.Run("retryAfterIsTheRestOfTheLease", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		mustClaim(t, s, "key_a", "k1", "fp1", 90*time.Second)
		got := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if got.Outcome != InUse || got.RetryAfter != 90*time.Second {
			t.Fatalf("claim = %+v, want InUse with RetryAfter 90s", got)
		}
		s.wait(200 * time.Millisecond)
		got = mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if got.RetryAfter != 90*time.Second {
			t.Fatalf("RetryAfter %v after 200ms, want 90s (rounded up)", got.RetryAfter)
		}
	})

	t.Run("completedRecordExpiresAfterRetention", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if err := s.Complete(ctx, "key_a", "k1", c.Token, ok, lease); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		s.wait(lease + 100*time.Millisecond)
		if got := mustClaim(t, s, "key_a", "k1", "fp2", lease); got.Outcome != Claimed {
			t.Fatalf("claim after retention = %v, want Claimed", got.Outcome)
		}
	})

	t.Run("storedResponseIsACopy", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		resp := Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"a":1}`)}
		if err := s.Complete(ctx, "key_a", "k1", c.Token, resp, DefaultRetention); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		resp.Body[0] = 'X'
		resp.Header["Content-Type"] = "text/plain"
		got := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		got.Response.Body[0] = 'Y'
		again := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		want := &Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"a":1}`)}
		if diff := cmp.Diff(want, again.Response); diff != "" {
			t.Fatalf("stored response changed through a caller's slice or map (-want +got):\n%s", diff)
		}
	})

	t.Run("invalidDurations", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		if _, err := s.Claim(ctx, "key_a", "k1", "fp1", 0); err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("Claim with a zero lease: %v, want a plain error", err)
		}
		c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		if err := s.Renew(ctx, "key_a", "k1", c.Token, time.Microsecond); err == nil || errors.Is(err, ErrLeaseLost) {
			t.Errorf("Renew with a 1µs lease: %v, want a plain error", err)
		}
		if err := s.Complete(ctx, "key_a", "k1", c.Token, ok, -time.Second); err == nil || errors.Is(err, ErrLeaseLost) {
			t.Errorf("Complete with a negative retention: %v, want a plain error", err)
		}
	})

	t.Run("cancelledContext", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.Claim(ctx, "key_a", "k2", "fp1", lease); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Errorf("Claim with a cancelled context: %v, want ErrUnavailable wrapping context.Canceled", err)
		}
		if err := s.Complete(ctx, "key_a", "k1", c.Token, ok, DefaultRetention); !errors.Is(err, ErrUnavailable) {
			t.Errorf("Complete with a cancelled context: %v, want ErrUnavailable", err)
		}
		// The helpers detach from the request's cancellation.
		if err := CompleteWithoutCancel(ctx, s, "key_a", "k1", c.Token, ok, DefaultRetention); err != nil {
			t.Errorf("CompleteWithoutCancel with a cancelled context: %v", err)
		}
		c2 := mustClaim(t, s, "key_a", "k3", "fp1", lease)
		if err := ReleaseWithoutCancel(ctx, s, "key_a", "k3", c2.Token); err != nil {
			t.Errorf("ReleaseWithoutCancel with a cancelled context: %v", err)
		}
		if got := mustClaim(t, s, "key_a", "k3", "fp1", lease); got.Outcome != Claimed {
			t.Errorf("claim after ReleaseWithoutCancel = %v, want Claimed", got.Outcome)
		}
	})

	t.Run("concurrentClaimsHaveOneWinner", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		const n = 50
		results := make([]ClaimResult, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = s.Claim(context.Background(), "key_a", "k1", "fp1", 10*time.Second)
			})
		}
		close(start)
		wg.Wait()
		counts := map[Outcome]int{}
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("claim %d: %v", i, errs[i])
			}
			counts[results[i].Outcome]++
		}
		if diff := cmp.Diff(map[Outcome]int{Claimed: 1, InUse: n - 1}, counts); diff != "" {
			t.Fatalf("outcomes of %d concurrent claims (-want +got):\n%s", n, diff)
		}
	})
}

func mustClaim(t *testing.T, s Store, scope, key, fingerprint string, lease time.Duration) ClaimResult {
	t.Helper()
	res, err := s.Claim(context.Background(), scope, key, fingerprint, lease)
	if err != nil {
		t.Fatalf("Claim(%q, %q): %v", scope, key, err)
	}
	return res
}

func TestRedisStore(t *testing.T) {
	t.Parallel()
	testStore(t, func(t *testing.T) storeHarness {
		rdb, prefix := newTestRedis(t)
		return storeHarness{Store: NewRedisStore(rdb, prefix), wait: time.Sleep}
	})
}

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	testStore(t, func(t *testing.T) storeHarness {
		clock := newFakeClock()
		return storeHarness{Store: NewMemoryStore(clock.Now), wait: clock.Advance}
	})
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRedisClusterStore runs the store's suite on a Redis Cluster of its own
// (3 masters, 3 replicas): every script keeps its keys in one slot, and the
// client follows the cluster's redirections.
func TestRedisClusterStore(t *testing.T) {
	t.Parallel()
	cluster := testdb.StartRedisCluster(t)
	testStore(t, func(t *testing.T) storeHarness {
		rdb, prefix := cluster.ClientPrefix(t)
		return storeHarness{Store: NewRedisStore(rdb, prefix), wait: time.Sleep}
	})
}
