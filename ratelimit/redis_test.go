package ratelimit

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/test/testdb"
)

func TestRedisLimiterKeysShareHashTag(t *testing.T) {
	t.Parallel()
	rdb, prefix := newTestRedis(t)
	l := NewRedisLimiter(rdb, prefix, Config{Quota: 3, Window: 3 * time.Second, Lease: time.Minute, CallTimeout: 2 * time.Second}, nil)
	_, slot := mustAdmit(t, l, "env_01abc")
	defer slot.Release()

	ctx := context.Background()
	tat, err := rdb.PTTL(ctx, prefix+"rl:{env_01abc}:tat").Result()
	if err != nil || tat <= 0 || tat > time.Second {
		t.Errorf("TAT key TTL %v (%v), want (0, 1s]: the TAT after one request is one emission interval ahead", tat, err)
	}
	inflight, err := rdb.PTTL(ctx, prefix+"rl:{env_01abc}:inflight").Result()
	if err != nil || inflight <= 50*time.Second || inflight > time.Minute {
		t.Errorf("in-flight key TTL %v (%v), want about the lease (1m)", inflight, err)
	}
	if n, err := rdb.ZCard(ctx, prefix+"rl:{env_01abc}:inflight").Result(); err != nil || n != 1 {
		t.Errorf("in-flight slots %d (%v), want 1", n, err)
	}
	slot.Release()
	if n, err := rdb.ZCard(ctx, prefix+"rl:{env_01abc}:inflight").Result(); err != nil || n != 0 {
		t.Errorf("in-flight slots after Release %d (%v), want 0", n, err)
	}
}

func TestRedisLimiterReplicasShareOneQuota(t *testing.T) {
	t.Parallel()
	rdb, prefix := newTestRedis(t)
	cfg := Config{Quota: 3, Window: 3 * time.Second, Inflight: 10, CallTimeout: 2 * time.Second}
	replicas := []*RedisLimiter{NewRedisLimiter(rdb, prefix, cfg, nil), NewRedisLimiter(rdb, prefix, cfg, nil)}
	var got []int
	for i := range 4 {
		d, _ := mustAdmit(t, replicas[i%2], "env_a")
		if !d.Allowed {
			got = append(got, -1)
			continue
		}
		got = append(got, d.Remaining)
	}
	if diff := cmp.Diff([]int{2, 1, 0, -1}, got); diff != "" {
		t.Errorf("remaining, -1 for denied (-want +got):\n%s", diff)
	}
}

// TestRedisLimiterReadsNoProcessClock guards the design rule of §10: the Redis
// limiter and fleet take the time from Redis TIME inside their scripts, so
// replicas with skewed clocks decide alike. No code of redis.go may read the
// process clock.
func TestRedisLimiterReadsNoProcessClock(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "redis.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" {
			switch sel.Sel.Name {
			case "Now", "Since", "Until":
				t.Errorf("%s: redis.go reads the process clock (time.%s)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
		}
		return true
	})
	for name, src := range map[string]string{"admit": admitSource, "acquire": acquireSource, "renew": renewSource} {
		if !strings.Contains(src, "redis.call('TIME')") {
			t.Errorf("%s script does not use Redis TIME", name)
		}
	}
}

func TestRedisFailsOpenWhenUnreachable(t *testing.T) {
	t.Parallel()
	log, logs := newTestLogger()
	rdb := newClient(t, "127.0.0.1:1", true)
	l := NewRedisLimiter(rdb, "test:", Config{CallTimeout: 150 * time.Millisecond}, log)

	start := time.Now()
	d, slot, err := l.Admit(context.Background(), "env_a")
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if diff := cmp.Diff(Decision{Allowed: true, FailedOpen: true}, d); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	if elapsed > 500*time.Millisecond {
		t.Errorf("failing open took %v, want about the call timeout (150ms)", elapsed)
	}
	if err := slot.Renew(context.Background()); err != nil {
		t.Errorf("Renew of a failed-open slot: %v", err)
	}
	slot.Release()
	if h := RateLimitHeader(Config{}, d); h != "" {
		t.Errorf("RateLimit header %q, want none", h)
	}
	if l.FailOpens() != 1 {
		t.Errorf("FailOpens = %d, want 1", l.FailOpens())
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "rate limit failed open") ||
		!strings.Contains(lines[0], "environment_id=env_a") || !strings.Contains(lines[0], "error=") {
		t.Errorf("log:\n%s\nwant one warning with the environment and the cause", logs)
	}

	f := NewRedisFleet(rdb, "test:", 1, time.Minute, 150*time.Millisecond, log)
	ok, wait, fslot, err := f.Acquire(context.Background())
	if !ok || wait != 0 || fslot == nil || err != nil {
		t.Errorf("fleet: ok %v, wait %v, slot %v, err %v; want a granted no-op slot", ok, wait, fslot, err)
	}
	fslot.Release()
	if f.FailOpens() != 1 || !strings.Contains(logs.String(), "fleet capacity failed open") {
		t.Errorf("fleet: FailOpens = %d, log:\n%s", f.FailOpens(), logs)
	}
}

func TestRedisFailsOpenWhenSlow(t *testing.T) {
	t.Parallel()
	for _, contextTimeouts := range []bool{true, false} {
		name := map[bool]string{true: "contextTimeouts", false: "socketTimeoutsOnly"}[contextTimeouts]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			direct, prefix := newTestRedis(t)
			ctx := context.Background()
			for _, s := range []*redis.Script{admitScript, acquireScript, renewScript} {
				if err := s.Load(ctx, direct).Err(); err != nil {
					t.Fatal(err)
				}
			}
			// Answers a second late: far enough past the call timeout to tell
			// the deadline from a wait for the answer on a busy machine.
			slow := newClient(t, testdb.StartProxy(t, time.Second).Addr(), contextTimeouts)
			warm, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := slow.Ping(warm).Err(); err != nil { // a connection ready in the pool
				t.Fatal(err)
			}
			log, logs := newTestLogger()
			l := NewRedisLimiter(slow, prefix, Config{Inflight: 1, CallTimeout: 150 * time.Millisecond}, log)

			start := time.Now()
			d, _, err := l.Admit(ctx, "env_a")
			elapsed := time.Since(start)
			if err != nil || !d.Allowed || !d.FailedOpen {
				t.Fatalf("Admit: %+v, %v; want allowed, failed open", d, err)
			}
			if elapsed > 750*time.Millisecond {
				t.Errorf("failing open took %v, want about the call timeout (150ms)", elapsed)
			}
			if !strings.Contains(logs.String(), "redis slower than 150ms") {
				t.Errorf("log:\n%s\nwant the cause", logs)
			}

			// The script did run in Redis: the slot it took is released once
			// the late answer (or its failure) is known, not held for a lease.
			tatKey, inflightKey := prefix+"rl:{env_a}:tat", prefix+"rl:{env_a}:inflight"
			eventually(t, 5*time.Second, "the script ran", func() bool {
				return direct.Exists(ctx, tatKey).Val() == 1
			})
			eventually(t, 5*time.Second, "the slot of the failed-open request is released", func() bool {
				return direct.ZCard(ctx, inflightKey).Val() == 0
			})

			f := NewRedisFleet(slow, prefix, 1, time.Minute, 150*time.Millisecond, log)
			start = time.Now()
			ok, _, _, err := f.Acquire(ctx)
			if elapsed := time.Since(start); err != nil || !ok || elapsed > 750*time.Millisecond {
				t.Errorf("fleet: ok %v, err %v after %v; want granted within about 150ms", ok, err, elapsed)
			}
			eventually(t, 5*time.Second, "the fleet slot of the failed-open request is released", func() bool {
				return direct.ZCard(ctx, prefix+"rl:fleet:apply").Val() == 0
			})
		})
	}
}

func TestRedisFleetLeaseOfKilledHolderExpires(t *testing.T) {
	t.Parallel()
	rdb, prefix := newTestRedis(t)
	f := NewRedisFleet(rdb, prefix, 1, 300*time.Millisecond, 2*time.Second, nil)
	ctx := context.Background()
	ok, _, killed, err := f.Acquire(ctx) // never released
	if err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if ok, wait, _, _ := f.Acquire(ctx); ok || wait != time.Second {
		t.Fatalf("while the lease lasts: ok %v, retry after %v; want refused, 1s", ok, wait)
	}
	time.Sleep(350 * time.Millisecond)
	ok, _, slot, err := f.Acquire(ctx)
	if err != nil || !ok {
		t.Fatalf("after the lease: ok %v, err %v", ok, err)
	}
	defer slot.Release()
	if err := killed.Renew(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Renew of the expired slot: %v, want ErrLeaseLost", err)
	}
}

func TestRedisHoldKeepsSlotPastItsLease(t *testing.T) {
	t.Parallel()
	rdb, prefix := newTestRedis(t)
	l := NewRedisLimiter(rdb, prefix, Config{Inflight: 1, Lease: 300 * time.Millisecond, CallTimeout: 2 * time.Second}, slog.New(slog.DiscardHandler))
	_, slot := mustAdmit(t, l, "env_a")
	var lost atomic.Bool
	stop := Hold(slot, 100*time.Millisecond, func() { lost.Store(true) })
	time.Sleep(700 * time.Millisecond)
	if d, _ := mustAdmit(t, l, "env_a"); d.Allowed {
		t.Errorf("a held slot was taken after %v", 700*time.Millisecond)
	}
	stop()
	if lost.Load() {
		t.Errorf("onLost called while renewals succeeded")
	}
	time.Sleep(400 * time.Millisecond)
	d, next := mustAdmit(t, l, "env_a")
	if !d.Allowed {
		t.Errorf("a slot no longer held is still busy")
	}
	next.Release()
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// roundTrips counts the commands and pipelines a client sends, but the
// handshake of its new connections.
type roundTrips struct{ commands, pipelines atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "hello" { // a new connection's handshake
			r.commands.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if n := cmds[0].Name(); n != "hello" && n != "client" {
			r.pipelines.Add(1)
		}
		return next(ctx, cmds)
	}
}

// TestReleaseGivesBackSlotsInOneRoundTrip: Release gives back an
// environment's in-flight slot and a fleet slot in one pipeline, after
// which both can be taken again; each slot is released once, a slot given
// back already costs nothing, and a slot of no limiter is fine.
func TestReleaseGivesBackSlotsInOneRoundTrip(t *testing.T) {
	t.Parallel()
	rdb, prefix := newTestRedis(t)
	l := NewRedisLimiter(rdb, prefix, Config{Inflight: 1, CallTimeout: 2 * time.Second}, slog.New(slog.DiscardHandler))
	f := NewRedisFleet(rdb, prefix, 1, 0, 2*time.Second, nil)
	ctx := context.Background()
	acquire := func() Slot {
		t.Helper()
		ok, _, slot, err := f.Acquire(ctx)
		if err != nil || !ok {
			t.Fatalf("Acquire: %v, %v", ok, err)
		}
		return slot
	}
	_, slot := mustAdmit(t, l, "env_a")
	fslot := acquire()
	if d, _ := mustAdmit(t, l, "env_a"); d.Allowed {
		t.Fatal("a second in-flight slot was granted beside the first")
	}
	if ok, _, _, _ := f.Acquire(ctx); ok {
		t.Fatal("a second fleet slot was granted beside the first")
	}
	var rt roundTrips
	rdb.AddHook(&rt)
	Release(fslot, NoSlot, slot)
	if c, p := rt.commands.Load(), rt.pipelines.Load(); c != 0 || p != 1 {
		t.Errorf("Release of two slots sent %d commands and %d pipelines, want one pipeline", c, p)
	}
	Release(slot, fslot)
	slot.Release()
	if c, p := rt.commands.Load(), rt.pipelines.Load(); c != 0 || p != 1 {
		t.Errorf("releasing slots given back already sent %d commands and %d pipelines more", c, p-1)
	}
	d, again := mustAdmit(t, l, "env_a")
	if !d.Allowed {
		t.Error("the in-flight slot released is still busy")
	}
	Release(again, acquire())
}
