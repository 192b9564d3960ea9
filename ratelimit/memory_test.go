package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMemoryLimiterExactDurations(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC))
	l := NewMemoryLimiter(Config{Quota: 3, Window: 3 * time.Second, Inflight: 10}, clock.Now)
	var got []Decision
	admit := func() {
		d, _ := mustAdmit(t, l, "env_a")
		got = append(got, d)
	}
	admit()
	admit()
	admit()
	admit()
	clock.Advance(500 * time.Millisecond)
	admit()
	clock.Advance(500 * time.Millisecond)
	admit()
	want := []Decision{
		{Allowed: true, Remaining: 2, Reset: time.Second},
		{Allowed: true, Remaining: 1, Reset: 2 * time.Second},
		{Allowed: true, Remaining: 0, Reset: time.Second},
		{Policy: PolicyConfigPlan, Reset: time.Second, RetryAfter: time.Second},
		{Policy: PolicyConfigPlan, Reset: 500 * time.Millisecond, RetryAfter: time.Second},
		{Allowed: true, Remaining: 0, Reset: time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// TestMemoryLimiterIgnoresClockOrigin runs one sequence of requests on
// limiters whose clocks are shifted: only elapsed time may matter.
func TestMemoryLimiterIgnoresClockOrigin(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	run := func(start time.Time) []Decision {
		clock := newFakeClock(start)
		l := NewMemoryLimiter(Config{Quota: 5, Window: 10 * time.Second, Inflight: 2, Lease: 3 * time.Second}, clock.Now)
		var got []Decision
		var held []Slot
		for i := range 30 {
			d, slot := mustAdmit(t, l, "env_a")
			got = append(got, d)
			if d.Allowed {
				held = append(held, slot)
			}
			if i%3 == 0 && len(held) > 0 {
				held[0].Release()
				held = held[1:]
			}
			clock.Advance(time.Duration(i%4) * 700 * time.Millisecond)
		}
		return got
	}
	want := run(base)
	for _, shift := range []time.Duration{time.Hour, -time.Hour, 24 * 365 * time.Hour, 1234567 * time.Microsecond} {
		if diff := cmp.Diff(want, run(base.Add(shift))); diff != "" {
			t.Errorf("clock shifted by %v (-want +got):\n%s", shift, diff)
		}
	}
}

func TestMemoryLimiterForgetsIdleEnvironments(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC))
	l := NewMemoryLimiter(Config{}, clock.Now)
	for i := range sweepEvery {
		_, slot := mustAdmit(t, l, fmt.Sprintf("env_%d", i))
		slot.Release()
	}
	clock.Advance(DefaultWindow)
	for range sweepEvery {
		mustAdmit(t, l, "env_busy")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.envs) > 1 {
		t.Errorf("%d environments remembered, want only the busy one", len(l.envs))
	}
}

func TestMemoryFleetHoldsUntilRelease(t *testing.T) {
	t.Parallel()
	f := NewMemoryFleet(1)
	ctx := context.Background()
	ok, _, slot, err := f.Acquire(ctx)
	if !ok || err != nil {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if err := slot.Renew(ctx); err != nil {
		t.Errorf("Renew of a held slot: %v", err)
	}
	if ok, wait, _, _ := f.Acquire(ctx); ok || wait != time.Second {
		t.Errorf("full fleet: ok %v, retry after %v; want refused, 1s", ok, wait)
	}
	slot.Release()
	slot.Release()
	if err := slot.Renew(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Renew after Release: %v, want ErrLeaseLost", err)
	}
	if ok, _, _, _ := f.Acquire(ctx); !ok {
		t.Errorf("after Release: refused")
	}
}

// TestMemoryLimiterOfThePreviewPolicy names its own policies when it
// denies, and keeps its state apart from config_plan's.
func TestMemoryLimiterOfThePreviewPolicy(t *testing.T) {
	t.Parallel()
	preview := NewMemoryLimiter(Config{Policy: PolicyPreview, Quota: 2, Window: time.Hour, Inflight: 1}, nil)
	plan := NewMemoryLimiter(Config{Quota: 2, Window: time.Hour, Inflight: 1}, nil)
	d, slot := mustAdmit(t, preview, "env")
	if !d.Allowed {
		t.Fatalf("first preview denied: %+v", d)
	}
	if d, _ := mustAdmit(t, preview, "env"); d.Allowed || d.Policy != PolicyPreviewInflight {
		t.Errorf("a second preview at once: %+v, want denied by %s", d, PolicyPreviewInflight)
	}
	if d, s := mustAdmit(t, plan, "env"); !d.Allowed {
		t.Errorf("config_plan denied by a preview: %+v", d)
	} else {
		s.Release()
	}
	slot.Release()
	_, slot = mustAdmit(t, preview, "env")
	slot.Release()
	if d, _ := mustAdmit(t, preview, "env"); d.Allowed || d.Policy != PolicyPreview {
		t.Errorf("a third preview: %+v, want denied by %s", d, PolicyPreview)
	}
}
