package ratelimit

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGCRAFormulas(t *testing.T) {
	t.Parallel()
	const s = int64(time.Second / time.Microsecond)
	g := newGCRA(Config{Quota: 30, Window: time.Minute}.WithDefaults())
	if g.emission != 2*s || g.burst != 60*s {
		t.Fatalf("T = %d, L = %d; want 2s, 60s", g.emission, g.burst)
	}
	now := int64(1_764_453_600) * s // a realistic Redis TIME
	tat := int64(0)                 // no key
	var remaining []int
	for range 30 {
		ok, next := g.admit(now, tat)
		if !ok {
			t.Fatalf("denied within the burst after %d", len(remaining))
		}
		tat = next
		r, _ := g.state(now, tat)
		remaining = append(remaining, r)
	}
	if remaining[0] != 29 || remaining[29] != 0 {
		t.Errorf("remaining %v, want 29 down to 0", remaining)
	}
	if ok, _ := g.admit(now, tat); ok {
		t.Fatalf("31st request allowed")
	}
	if diff := cmp.Diff(Decision{Policy: PolicyConfigPlan, Reset: 2 * time.Second, RetryAfter: 2 * time.Second}, g.deniedRate(now, tat)); diff != "" {
		t.Errorf("31st (-want +got):\n%s", diff)
	}
	// One emission interval later, exactly one more.
	if ok, _ := g.admit(now+2*s-1, tat); ok {
		t.Errorf("allowed 1µs early")
	}
	ok, next := g.admit(now+2*s, tat)
	if !ok {
		t.Fatalf("denied after one emission interval")
	}
	if diff := cmp.Diff(Decision{Allowed: true, Remaining: 0, Reset: 2 * time.Second}, g.allowed(now+2*s, next)); diff != "" {
		t.Errorf("after one interval (-want +got):\n%s", diff)
	}
	// The full quota is back at the TAT: r = Q means nothing is in use.
	if r, reset := g.state(next, next); r != 30 || reset != 0 {
		t.Errorf("at the TAT: r = %d, t = %d; want 30, 0", r, reset)
	}
}

func TestGCRAUnevenWindow(t *testing.T) {
	t.Parallel()
	// 7 per minute: T is rounded down to the microsecond, L = 7T.
	g := newGCRA(Config{Quota: 7, Window: time.Minute}.WithDefaults())
	if g.emission != 8_571_428 || g.burst != 7*8_571_428 {
		t.Fatalf("T = %d, L = %d", g.emission, g.burst)
	}
	now, tat, allowed := int64(1e15), int64(0), 0
	for {
		ok, next := g.admit(now, tat)
		if !ok {
			break
		}
		tat, allowed = next, allowed+1
	}
	if allowed != 7 {
		t.Errorf("burst of %d, want 7", allowed)
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	want := Config{Policy: PolicyConfigPlan, Quota: 30, Window: time.Minute, Inflight: 2, Lease: 2 * time.Minute, CallTimeout: 150 * time.Millisecond}
	if diff := cmp.Diff(want, Config{Quota: -1}.WithDefaults()); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	want = Config{Policy: PolicyPreview, Quota: 120, Window: time.Minute, Inflight: 4, Lease: 2 * time.Minute, CallTimeout: 150 * time.Millisecond}
	if diff := cmp.Diff(want, Config{Policy: PolicyPreview}.WithDefaults()); diff != "" {
		t.Errorf("preview defaults (-want +got):\n%s", diff)
	}
	if got := (Config{Policy: PolicyPreview}).InflightPolicy(); got != PolicyPreviewInflight {
		t.Errorf("InflightPolicy = %q, want %q", got, PolicyPreviewInflight)
	}
}

// stubSlot fails its renewals with ErrLeaseLost from the lost-th on.
type stubSlot struct {
	renewals atomic.Int32
	lost     int32
}

func (s *stubSlot) Renew(context.Context) error {
	if s.renewals.Add(1) >= s.lost {
		return ErrLeaseLost
	}
	return errors.New("redis down") // transient: Hold keeps renewing
}

func (s *stubSlot) Release() {}

func TestHoldStopsWhenLeaseLost(t *testing.T) {
	t.Parallel()
	slot := &stubSlot{lost: 3}
	lost := make(chan struct{})
	stop := Hold(slot, 5*time.Millisecond, func() { close(lost) })
	defer stop()
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("onLost not called")
	}
	time.Sleep(30 * time.Millisecond)
	if n := slot.renewals.Load(); n != 3 {
		t.Errorf("%d renewals, want 3 (none after the lease was lost)", n)
	}
}

func TestHoldStopWaitsAndIsIdempotent(t *testing.T) {
	t.Parallel()
	slot := &stubSlot{lost: 1 << 30}
	stop := Hold(slot, time.Millisecond, nil)
	time.Sleep(20 * time.Millisecond)
	stop()
	n := slot.renewals.Load()
	time.Sleep(20 * time.Millisecond)
	stop()
	if slot.renewals.Load() != n {
		t.Errorf("renewals went on after stop")
	}
}
