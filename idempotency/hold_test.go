package idempotency

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestHoldKeepsTheClaimPastItsLease(t *testing.T) {
	t.Parallel()
	rdb, prefix := newTestRedis(t)
	s := NewRedisStore(rdb, prefix)
	ctx, cancel := context.WithCancel(context.Background())
	const lease = 300 * time.Millisecond
	c := mustClaim(t, s, "key_a", "k1", "fp1", lease)

	h := Hold(ctx, s, "key_a", "k1", c.Token, lease)
	cancel() // the client went away; the operation still runs and keeps its key
	time.Sleep(3 * lease)
	if got := mustClaim(t, s, "key_a", "k1", "fp1", lease); got.Outcome != InUse {
		t.Fatalf("claim while held for 3 leases = %v, want InUse", got.Outcome)
	}
	h.Stop()
	h.Stop() // idempotent
	if h.LeaseLost() {
		t.Error("LeaseLost after a normal hold")
	}
	if err := CompleteWithoutCancel(ctx, s, "key_a", "k1", c.Token, Response{Status: 201}, DefaultRetention); err != nil {
		t.Fatalf("CompleteWithoutCancel after Stop: %v", err)
	}
}

func TestHoldStopLetsTheLeasePass(t *testing.T) {
	t.Parallel()
	rdb, prefix := newTestRedis(t)
	s := NewRedisStore(rdb, prefix)
	const lease = 300 * time.Millisecond
	c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
	h := Hold(context.Background(), s, "key_a", "k1", c.Token, lease)
	time.Sleep(lease / 2)
	h.Stop()
	time.Sleep(lease + 100*time.Millisecond)
	if got := mustClaim(t, s, "key_a", "k1", "fp1", lease); got.Outcome != Claimed {
		t.Fatalf("claim a lease after Stop = %v, want Claimed (the crashed request's retry runs)", got.Outcome)
	}
}

func TestHoldReportsALostLease(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := NewMemoryStore(clock.Now)
	const lease = 30 * time.Millisecond
	c := mustClaim(t, s, "key_a", "k1", "fp1", lease)
	clock.Advance(lease) // the lease passes before the first renewal
	again := mustClaim(t, s, "key_a", "k1", "fp1", lease)
	if again.Outcome != Claimed {
		t.Fatalf("claim after the lease = %v, want Claimed", again.Outcome)
	}

	h := Hold(context.Background(), s, "key_a", "k1", c.Token, lease)
	deadline := time.Now().Add(2 * time.Second)
	for !h.LeaseLost() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	h.Stop()
	if !h.LeaseLost() {
		t.Fatal("LeaseLost is false after the record was claimed by another request")
	}
	if err := s.Complete(context.Background(), "key_a", "k1", c.Token, Response{Status: 200}, DefaultRetention); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Complete by the old owner: %v, want ErrLeaseLost", err)
	}
}

// countingStore counts renewals and reports the store unreachable.
type countingStore struct {
	Store
	renewals atomic.Int32
}

func (s *countingStore) Renew(ctx context.Context, scope, key, token string, lease time.Duration) error {
	s.renewals.Add(1)
	return ErrUnavailable
}

func TestHoldRetriesWhenTheStoreIsUnreachable(t *testing.T) {
	t.Parallel()
	s := &countingStore{Store: NewMemoryStore(nil)}
	h := Hold(context.Background(), s, "key_a", "k1", "token", 30*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	h.Stop()
	n := s.renewals.Load()
	if n < 3 {
		t.Errorf("%d renewals in 200ms with a 30ms lease, want at least 3", n)
	}
	if h.LeaseLost() {
		t.Error("LeaseLost after renewals that only failed to reach the store")
	}
	time.Sleep(50 * time.Millisecond)
	if after := s.renewals.Load(); after != n {
		t.Errorf("renewals went on after Stop returned: %d then %d", n, after)
	}
}
