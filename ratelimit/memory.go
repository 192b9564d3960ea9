package ratelimit

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"
)

// sweepEvery is how many admissions pass between two sweeps of the
// environments whose state is back to "full quota, no slot".
const sweepEvery = 1024

// MemoryLimiter is the Limiter of dev mode: the semantics of RedisLimiter in
// one process, on the clock it is given.
type MemoryLimiter struct {
	cfg  Config
	gcra gcra
	now  func() time.Time

	mu     sync.Mutex
	envs   map[string]*memoryEnv
	admits int
}

type memoryEnv struct {
	tat   int64            // µs; 0 = full quota
	slots map[string]int64 // token → lease expiry (µs)
}

var _ Limiter = (*MemoryLimiter)(nil)

// NewMemoryLimiter returns an in-process limiter. A nil now means time.Now.
func NewMemoryLimiter(cfg Config, now func() time.Time) *MemoryLimiter {
	cfg = cfg.WithDefaults()
	if now == nil {
		now = time.Now
	}
	return &MemoryLimiter{cfg: cfg, gcra: newGCRA(cfg), now: now, envs: map[string]*memoryEnv{}}
}

// Admit implements Limiter.
func (l *MemoryLimiter) Admit(ctx context.Context, env string) (Decision, Slot, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, noopSlot{}, fmt.Errorf("rate limit %s: %w", env, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now().UnixMicro()
	l.sweep(now)
	e := l.envs[env]
	if e == nil {
		e = &memoryEnv{slots: map[string]int64{}}
		l.envs[env] = e
	}
	earliest := dropExpired(e.slots, now)
	tat := max(e.tat, now)
	if len(e.slots) >= l.cfg.Inflight {
		return l.gcra.deniedInflight(now, tat, earliest), noopSlot{}, nil
	}
	ok, newTAT := l.gcra.admit(now, tat)
	if !ok {
		return l.gcra.deniedRate(now, tat), noopSlot{}, nil
	}
	e.tat = newTAT
	token := rand.Text()
	e.slots[token] = now + l.cfg.Lease.Microseconds()
	return l.gcra.allowed(now, newTAT), &memorySlot{limiter: l, env: env, token: token}, nil
}

// sweep forgets, now and then, the environments that hold nothing.
func (l *MemoryLimiter) sweep(now int64) {
	l.admits++
	if l.admits%sweepEvery != 0 {
		return
	}
	for env, e := range l.envs {
		dropExpired(e.slots, now)
		if e.tat <= now && len(e.slots) == 0 {
			delete(l.envs, env)
		}
	}
}

// dropExpired removes the expired leases and returns the earliest live expiry.
func dropExpired(slots map[string]int64, now int64) (earliest int64) {
	for token, exp := range slots {
		switch {
		case exp <= now:
			delete(slots, token)
		case earliest == 0 || exp < earliest:
			earliest = exp
		}
	}
	return earliest
}

// memorySlot is an in-flight slot of a MemoryLimiter.
type memorySlot struct {
	limiter *MemoryLimiter
	env     string
	token   string
}

// Renew implements Slot.
func (s *memorySlot) Renew(context.Context) error {
	if s == nil {
		return nil
	}
	l := s.limiter
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now().UnixMicro()
	e := l.envs[s.env]
	if e == nil {
		return ErrLeaseLost
	}
	if exp, ok := e.slots[s.token]; !ok || exp <= now {
		delete(e.slots, s.token)
		return ErrLeaseLost
	}
	e.slots[s.token] = now + l.cfg.Lease.Microseconds()
	return nil
}

// Release implements Slot.
func (s *memorySlot) Release() {
	if s == nil {
		return
	}
	l := s.limiter
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.envs[s.env]; e != nil {
		delete(e.slots, s.token)
	}
}

// MemoryFleet is the Fleet of dev mode. Its slots have no lease: a holder
// cannot die without the process that counts it, so a slot is held until
// released. When full, it asks to retry after one second.
type MemoryFleet struct {
	limit int
	mu    sync.Mutex
	held  map[*memoryFleetSlot]struct{}
}

var _ Fleet = (*MemoryFleet)(nil)

// NewMemoryFleet returns an in-process fleet capacity; limit ≤ 0 means
// DefaultFleetLimit.
func NewMemoryFleet(limit int) *MemoryFleet {
	if limit <= 0 {
		limit = DefaultFleetLimit
	}
	return &MemoryFleet{limit: limit, held: map[*memoryFleetSlot]struct{}{}}
}

// Acquire implements Fleet.
func (f *MemoryFleet) Acquire(ctx context.Context) (bool, time.Duration, Slot, error) {
	if err := ctx.Err(); err != nil {
		return false, 0, noopSlot{}, fmt.Errorf("fleet capacity: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.held) >= f.limit {
		return false, time.Second, noopSlot{}, nil
	}
	s := &memoryFleetSlot{fleet: f}
	f.held[s] = struct{}{}
	return true, 0, s, nil
}

type memoryFleetSlot struct{ fleet *MemoryFleet }

// Renew implements Slot.
func (s *memoryFleetSlot) Renew(context.Context) error {
	if s == nil {
		return nil
	}
	s.fleet.mu.Lock()
	defer s.fleet.mu.Unlock()
	if _, ok := s.fleet.held[s]; !ok {
		return ErrLeaseLost
	}
	return nil
}

// Release implements Slot.
func (s *memoryFleetSlot) Release() {
	if s == nil {
		return
	}
	s.fleet.mu.Lock()
	defer s.fleet.mu.Unlock()
	delete(s.fleet.held, s)
}
