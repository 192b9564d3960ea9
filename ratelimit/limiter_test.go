package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/test/testdb"
)

// The tests of this file hold for every implementation: each runs against
// the Redis limiter and fleet (real Redis, real time) and the memory ones
// (fake clock).

// backend makes the limiters and fleets of one implementation.
type backend struct {
	name string
	// limiter returns a limiter and a function that lets time pass for it.
	limiter func(t *testing.T, cfg Config) (Limiter, func(time.Duration))
	fleet   func(t *testing.T, limit int) Fleet
}

var backends = []backend{
	{
		name: "redis",
		limiter: func(t *testing.T, cfg Config) (Limiter, func(time.Duration)) {
			rdb, prefix := newTestRedis(t)
			if cfg.CallTimeout == 0 {
				// These tests check decisions, not latency: a busy test
				// machine must not turn them into fail-opens.
				cfg.CallTimeout = 2 * time.Second
			}
			return NewRedisLimiter(rdb, prefix, cfg, slog.New(slog.DiscardHandler)), time.Sleep
		},
		fleet: func(t *testing.T, limit int) Fleet {
			rdb, prefix := newTestRedis(t)
			return NewRedisFleet(rdb, prefix, limit, time.Minute, 2*time.Second, slog.New(slog.DiscardHandler))
		},
	},
	{
		name: "memory",
		limiter: func(t *testing.T, cfg Config) (Limiter, func(time.Duration)) {
			clock := newFakeClock(time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC))
			return NewMemoryLimiter(cfg, clock.Now), clock.Advance
		},
		fleet: func(t *testing.T, limit int) Fleet { return NewMemoryFleet(limit) },
	},
}

func forEachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b)
		})
	}
}

// fakeClock is the clock of a memory limiter.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock(start time.Time) *fakeClock { return &fakeClock{now: start} }

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

// view is what a client sees of a decision: its header values.
type view struct {
	Allowed    bool
	Policy     string
	Remaining  int
	RateLimit  string
	RetryAfter time.Duration
}

func viewOf(d Decision) view {
	return view{Allowed: d.Allowed, Policy: d.Policy, Remaining: d.Remaining, RateLimit: RateLimitHeader(Config{}, d), RetryAfter: d.RetryAfter}
}

// mustAdmit admits one request, which must get a real decision.
func mustAdmit(t *testing.T, l Limiter, env string) (Decision, Slot) {
	t.Helper()
	d, slot, err := l.Admit(context.Background(), env)
	if err != nil {
		t.Fatalf("Admit(%s): %v", env, err)
	}
	if d.FailedOpen {
		t.Fatalf("Admit(%s) failed open", env)
	}
	if slot == nil {
		t.Fatalf("Admit(%s) returned a nil Slot", env)
	}
	return d, slot
}

// countAllowed admits n requests one after the other, releasing each slot.
func countAllowed(t *testing.T, l Limiter, env string, n int) int {
	t.Helper()
	allowed := 0
	for range n {
		d, slot := mustAdmit(t, l, env)
		if d.Allowed {
			allowed++
		}
		slot.Release()
	}
	return allowed
}

func TestAdmitQuotaExactNumbers(t *testing.T) { forEachBackend(t, testAdmitQuotaExactNumbers) }

func testAdmitQuotaExactNumbers(t *testing.T, b backend) {
	l, advance := b.limiter(t, Config{Quota: 3, Window: 3 * time.Second, Inflight: 10, Lease: time.Minute})
	var got []view
	for range 4 {
		d, _ := mustAdmit(t, l, "env_a")
		got = append(got, viewOf(d))
	}
	want := []view{
		{Allowed: true, Remaining: 2, RateLimit: `"config_plan";r=2;t=1`},
		{Allowed: true, Remaining: 1, RateLimit: `"config_plan";r=1;t=2`},
		{Allowed: true, Remaining: 0, RateLimit: `"config_plan";r=0;t=1`},
		{Policy: PolicyConfigPlan, Remaining: 0, RateLimit: `"config_plan";r=0;t=1`, RetryAfter: time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}

	// Another environment has its own quota.
	d, _ := mustAdmit(t, l, "env_b")
	if diff := cmp.Diff(want[0], viewOf(d)); diff != "" {
		t.Errorf("env_b (-want +got):\n%s", diff)
	}

	// Once the reset time of the first answer has passed, the quota is full.
	advance(3 * time.Second)
	d, _ = mustAdmit(t, l, "env_a")
	if diff := cmp.Diff(want[0], viewOf(d)); diff != "" {
		t.Errorf("after the window (-want +got):\n%s", diff)
	}
}

func TestAdmitDeniedRequestConsumesNothing(t *testing.T) {
	forEachBackend(t, testAdmitDeniedRequestConsumesNothing)
}

func testAdmitDeniedRequestConsumesNothing(t *testing.T, b backend) {
	// One request per second once the burst of 3 is spent.
	l, advance := b.limiter(t, Config{Quota: 3, Window: 3 * time.Second, Inflight: 10})
	if got := countAllowed(t, l, "env_a", 3); got != 3 {
		t.Fatalf("burst: %d allowed, want 3", got)
	}
	if got := countAllowed(t, l, "env_a", 20); got != 0 {
		t.Fatalf("after the burst: %d allowed, want 0", got)
	}
	// Had the 20 denials consumed anything, nothing would pass now.
	advance(1200 * time.Millisecond)
	if got := countAllowed(t, l, "env_a", 20); got != 1 {
		t.Fatalf("1.2s later: %d allowed, want 1", got)
	}
	advance(time.Second)
	if got := countAllowed(t, l, "env_a", 20); got != 1 {
		t.Fatalf("2.2s later: %d allowed, want 1", got)
	}
}

func TestAdmitInflightLimit(t *testing.T) { forEachBackend(t, testAdmitInflightLimit) }

func testAdmitInflightLimit(t *testing.T, b backend) {
	l, _ := b.limiter(t, Config{Quota: 100, Window: 100 * time.Second, Inflight: 1, Lease: 5 * time.Second})
	d1, first := mustAdmit(t, l, "env_a")
	d2, denied := mustAdmit(t, l, "env_a")
	denied.Release() // a no-op: it must not free the first request's slot
	d3, _ := mustAdmit(t, l, "env_a")
	first.Release()
	d4, last := mustAdmit(t, l, "env_a")
	defer last.Release()

	got := []view{viewOf(d1), viewOf(d2), viewOf(d3), viewOf(d4)}
	inflight429 := view{
		Policy:     PolicyInflight,
		Remaining:  99, // a request denied by config_plan_inflight consumes no quota
		RateLimit:  `"config_plan";r=99;t=1, "config_plan_inflight";r=0;t=2`,
		RetryAfter: 2 * time.Second, // capped: live holders release within seconds
	}
	want := []view{
		{Allowed: true, Remaining: 99, RateLimit: `"config_plan";r=99;t=1`},
		inflight429,
		inflight429,
		{Allowed: true, Remaining: 98, RateLimit: `"config_plan";r=98;t=2`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestAdmitConcurrentRequestsGetExactlyTheInflightLimit(t *testing.T) {
	forEachBackend(t, testAdmitConcurrentRequestsGetExactlyTheInflightLimit)
}

func testAdmitConcurrentRequestsGetExactlyTheInflightLimit(t *testing.T, b backend) {
	l, _ := b.limiter(t, Config{Quota: 1000, Window: time.Hour, Inflight: 3})
	const n = 50
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		results = make([]Decision, n)
		slots   = make([]Slot, n)
		errs    = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], slots[i], errs[i] = l.Admit(context.Background(), "env_a")
		})
	}
	close(start)
	wg.Wait()

	var held []Slot
	policies := map[string]int{}
	for i, d := range results {
		if errs[i] != nil || d.FailedOpen {
			t.Fatalf("request %d: err %v, failed open %v", i, errs[i], d.FailedOpen)
		}
		if d.Allowed {
			held = append(held, slots[i])
		} else {
			policies[d.Policy]++
		}
	}
	if len(held) != 3 {
		t.Fatalf("%d allowed, want 3", len(held))
	}
	if diff := cmp.Diff(map[string]int{PolicyInflight: n - 3}, policies); diff != "" {
		t.Errorf("denials by policy (-want +got):\n%s", diff)
	}

	held[0].Release()
	if d, slot := mustAdmit(t, l, "env_a"); !d.Allowed {
		t.Errorf("after a release: denied by %s", d.Policy)
	} else {
		held[0] = slot
	}
	if d, _ := mustAdmit(t, l, "env_a"); d.Allowed {
		t.Errorf("with 3 slots held again: allowed")
	}
	for _, s := range held {
		s.Release()
	}
}

func TestAdmitLeaseOfKilledHolderExpires(t *testing.T) {
	forEachBackend(t, testAdmitLeaseOfKilledHolderExpires)
}

func testAdmitLeaseOfKilledHolderExpires(t *testing.T, b backend) {
	l, advance := b.limiter(t, Config{Inflight: 1, Lease: 300 * time.Millisecond})
	_, killed := mustAdmit(t, l, "env_a") // never released
	if d, _ := mustAdmit(t, l, "env_a"); d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("while the lease lasts: allowed %v, retry after %v; want denied, 1s", d.Allowed, d.RetryAfter)
	}
	advance(350 * time.Millisecond)
	d, slot := mustAdmit(t, l, "env_a")
	if !d.Allowed {
		t.Fatalf("after the lease: denied by %s", d.Policy)
	}
	defer slot.Release()
	if err := killed.Renew(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Renew of the expired slot: %v, want ErrLeaseLost", err)
	}
}

func TestRenewExtendsLease(t *testing.T) { forEachBackend(t, testRenewExtendsLease) }

func testRenewExtendsLease(t *testing.T, b backend) {
	l, advance := b.limiter(t, Config{Inflight: 1, Lease: 600 * time.Millisecond})
	_, slot := mustAdmit(t, l, "env_a")
	advance(400 * time.Millisecond)
	if err := slot.Renew(context.Background()); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	advance(400 * time.Millisecond) // past the first lease, within the renewed one
	if d, _ := mustAdmit(t, l, "env_a"); d.Allowed {
		t.Fatalf("within the renewed lease: allowed")
	}
	advance(700 * time.Millisecond)
	d, next := mustAdmit(t, l, "env_a")
	if !d.Allowed {
		t.Fatalf("after the renewed lease: denied by %s", d.Policy)
	}
	defer next.Release()
	if err := slot.Renew(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Renew after the lease: %v, want ErrLeaseLost", err)
	}
}

func TestReleaseIsIdempotent(t *testing.T) { forEachBackend(t, testReleaseIsIdempotent) }

func testReleaseIsIdempotent(t *testing.T, b backend) {
	l, _ := b.limiter(t, Config{Inflight: 2})
	_, a := mustAdmit(t, l, "env_a")
	_, b2 := mustAdmit(t, l, "env_a")
	defer b2.Release()
	a.Release()
	a.Release()
	_, c := mustAdmit(t, l, "env_a")
	defer c.Release()
	if d, _ := mustAdmit(t, l, "env_a"); d.Allowed {
		t.Errorf("a second Release freed another request's slot")
	}
	if err := a.Renew(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Renew after Release: %v, want ErrLeaseLost", err)
	}
}

func TestAdmitWhenCallerGaveUp(t *testing.T) { forEachBackend(t, testAdmitWhenCallerGaveUp) }

func testAdmitWhenCallerGaveUp(t *testing.T, b backend) {
	l, _ := b.limiter(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, slot, err := l.Admit(ctx, "env_a")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if d.Allowed || slot == nil {
		t.Errorf("decision %+v, slot %v: want denied with a no-op slot", d, slot)
	}
	if rl, ok := l.(*RedisLimiter); ok && rl.FailOpens() != 0 {
		t.Errorf("FailOpens = %d: a caller giving up is not a Redis failure", rl.FailOpens())
	}
}

func TestFleetLimitUnderConcurrency(t *testing.T) { forEachBackend(t, testFleetLimitUnderConcurrency) }

func testFleetLimitUnderConcurrency(t *testing.T, b backend) {
	f := b.fleet(t, 5)
	const n = 50
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		mu    sync.Mutex
		held  []Slot
		waits []time.Duration
	)
	for range n {
		wg.Go(func() {
			<-start
			ok, wait, slot, err := f.Acquire(context.Background())
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("Acquire: %v", err)
			case ok:
				held = append(held, slot)
			default:
				waits = append(waits, wait)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(held) != 5 || len(waits) != n-5 {
		t.Fatalf("%d acquired, %d refused; want 5, %d", len(held), len(waits), n-5)
	}
	for _, w := range waits {
		if w < time.Second || w%time.Second != 0 {
			t.Fatalf("retry after %v, want whole seconds ≥ 1s", w)
		}
	}

	held[0].Release()
	ok, _, slot, err := f.Acquire(context.Background())
	if err != nil || !ok {
		t.Fatalf("after a release: ok %v, err %v", ok, err)
	}
	held[0] = slot
	if ok, _, _, _ := f.Acquire(context.Background()); ok {
		t.Errorf("with 5 slots held again: acquired")
	}
	for _, s := range held {
		s.Release()
	}
	if ok, _, slot, _ := f.Acquire(context.Background()); !ok {
		t.Errorf("after releasing every slot: refused")
	} else {
		slot.Release()
	}
}

// limiterSuite is every test of this file, so that TestRedisClusterLimiter
// runs them all on one cluster.
var limiterSuite = []struct {
	name string
	run  func(*testing.T, backend)
}{
	{"AdmitQuotaExactNumbers", testAdmitQuotaExactNumbers},
	{"AdmitDeniedRequestConsumesNothing", testAdmitDeniedRequestConsumesNothing},
	{"AdmitInflightLimit", testAdmitInflightLimit},
	{"AdmitConcurrentRequestsGetExactlyTheInflightLimit", testAdmitConcurrentRequestsGetExactlyTheInflightLimit},
	{"AdmitLeaseOfKilledHolderExpires", testAdmitLeaseOfKilledHolderExpires},
	{"RenewExtendsLease", testRenewExtendsLease},
	{"ReleaseIsIdempotent", testReleaseIsIdempotent},
	{"AdmitWhenCallerGaveUp", testAdmitWhenCallerGaveUp},
	{"FleetLimitUnderConcurrency", testFleetLimitUnderConcurrency},
}

// TestRedisClusterLimiter runs the limiter and fleet tests on a Redis
// Cluster of its own (3 masters, 3 replicas): an environment's keys share a
// hash tag, the fleet's key is one, and the client follows redirections.
func TestRedisClusterLimiter(t *testing.T) {
	t.Parallel()
	cluster := testdb.StartRedisCluster(t)
	b := backend{
		name: "redis-cluster",
		limiter: func(t *testing.T, cfg Config) (Limiter, func(time.Duration)) {
			rdb, prefix := cluster.ClientPrefix(t)
			if cfg.CallTimeout == 0 {
				cfg.CallTimeout = 2 * time.Second // decisions, not latency (as for one node)
			}
			return NewRedisLimiter(rdb, prefix, cfg, slog.New(slog.DiscardHandler)), time.Sleep
		},
		fleet: func(t *testing.T, limit int) Fleet {
			rdb, prefix := cluster.ClientPrefix(t)
			return NewRedisFleet(rdb, prefix, limit, time.Minute, 2*time.Second, slog.New(slog.DiscardHandler))
		},
	}
	for _, tc := range limiterSuite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, b)
		})
	}
	// One client, as the service has: Release sends each master the slots
	// it holds, environments' and the fleet's, in one pipeline.
	t.Run("ReleaseGivesBackSlotsOnEveryMaster", func(t *testing.T) {
		t.Parallel()
		rdb, prefix := cluster.ClientPrefix(t)
		l := NewRedisLimiter(rdb, prefix, Config{Inflight: 1, CallTimeout: 2 * time.Second}, slog.New(slog.DiscardHandler))
		f := NewRedisFleet(rdb, prefix, 1, time.Minute, 2*time.Second, slog.New(slog.DiscardHandler))
		ok, _, fslot, err := f.Acquire(context.Background())
		if err != nil || !ok {
			t.Fatalf("Acquire: %v, %v", ok, err)
		}
		slots := []Slot{fslot}
		envs := []string{"env_a", "env_b", "env_c", "env_d", "env_e", "env_f", "env_g", "env_h"}
		for _, env := range envs {
			_, slot := mustAdmit(t, l, env)
			slots = append(slots, slot)
		}
		Release(slots...)
		for _, env := range envs {
			d, slot := mustAdmit(t, l, env)
			if !d.Allowed {
				t.Errorf("%s: the in-flight slot released is still busy", env)
			}
			slot.Release()
		}
		if ok, _, slot, err := f.Acquire(context.Background()); err != nil || !ok {
			t.Errorf("the fleet slot released is still busy: %v, %v", ok, err)
		} else {
			slot.Release()
		}
	})
}
