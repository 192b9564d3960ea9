package ratelimit

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The scripts take the time from Redis TIME, in microseconds, so every replica
// sees one clock whatever its own says. Numbers written back are formatted
// with %.0f: Lua's default conversion keeps only 14 significant digits.
// A slot is a member of a sorted set scored by its lease's expiry.

// admitScript checks config_plan_inflight, then config_plan, and on success
// stores the new TAT and adds the request's slot.
//
// KEYS: tat, inflight. ARGV: T, L, inflight limit, lease (µs), slot token.
// Returns {code, now, tat, earliest}: code 0 allowed (tat is the new TAT),
// 1 denied by config_plan_inflight (earliest: first lease expiry), 2 denied
// by config_plan.
const admitSource = `
local function fmt(n) return string.format('%.0f', n) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local emission, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, lease = tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', fmt(now))
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
if redis.call('ZCARD', KEYS[2]) >= limit then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {1, now, tat, tonumber(first[2])}
end
local newtat = tat + emission
if newtat - burst > now then
  return {2, now, tat, 0}
end
redis.call('SET', KEYS[1], fmt(newtat), 'PX', math.ceil((newtat - now) / 1000))
redis.call('ZADD', KEYS[2], fmt(now + lease), ARGV[5])
local ttl = math.ceil(lease / 1000)
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return {0, now, newtat, 0}
`

// acquireScript takes a slot of a sorted set under a limit.
//
// KEYS: slots. ARGV: limit, lease (µs), slot token.
// Returns {1, 0} when taken, {0, wait µs until the first lease expiry} when full.
const acquireSource = `
local function fmt(n) return string.format('%.0f', n) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', fmt(now))
if redis.call('ZCARD', KEYS[1]) >= limit then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(first[2]) - now}
end
redis.call('ZADD', KEYS[1], fmt(now + lease), ARGV[3])
local ttl = math.ceil(lease / 1000)
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return {1, 0}
`

// renewScript extends a live slot's lease; an expired one is removed.
//
// KEYS: slots. ARGV: lease (µs), slot token. Returns 1 renewed, 0 lost.
const renewSource = `
local function fmt(n) return string.format('%.0f', n) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local lease = tonumber(ARGV[1])
local score = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]))
if not score or score <= now then
  redis.call('ZREM', KEYS[1], ARGV[2])
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', fmt(now + lease), ARGV[2])
local ttl = math.ceil(lease / 1000)
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
`

var (
	admitScript   = redis.NewScript(admitSource)
	acquireScript = redis.NewScript(acquireSource)
	renewScript   = redis.NewScript(renewSource)
)

// RedisLimiter is the Limiter of a fleet of replicas. It has no clock of its
// own: every decision uses Redis TIME inside one script.
//
// Keys of an environment share a Cluster hash tag:
// "<prefix>rl:{<env>}:tat" (the TAT, expiring when the quota is full again)
// and "<prefix>rl:{<env>}:inflight" (the slots), with the policy's name
// before tat and inflight for a policy other than config_plan
// ("rl:{<env>}:config_preview:tat"). The prefix must not contain '{'.
//
// Each call is bounded by Config.CallTimeout even when the client ignores
// context deadlines for socket I/O (go-redis does unless ContextTimeoutEnabled
// is set); configure the client with ContextTimeoutEnabled so an abandoned
// call also frees its connection at the deadline.
type RedisLimiter struct {
	rdb       redis.UniversalClient
	prefix    string
	cfg       Config
	gcra      gcra
	log       *slog.Logger
	failOpens atomic.Uint64
}

var _ Limiter = (*RedisLimiter)(nil)

// NewRedisLimiter returns a limiter storing its state under prefix. A nil log
// means slog.Default().
func NewRedisLimiter(rdb redis.UniversalClient, prefix string, cfg Config, log *slog.Logger) *RedisLimiter {
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.Default()
	}
	return &RedisLimiter{rdb: rdb, prefix: prefix, cfg: cfg, gcra: newGCRA(cfg), log: log}
}

// FailOpens counts the requests admitted without a check because Redis failed
// or was too slow; the service exposes it as a metric.
func (l *RedisLimiter) FailOpens() uint64 { return l.failOpens.Load() }

func (l *RedisLimiter) tatKey(env string) string {
	return l.prefix + "rl:{" + env + "}:" + l.cfg.keyPart() + "tat"
}

func (l *RedisLimiter) inflightKey(env string) string {
	return l.prefix + "rl:{" + env + "}:" + l.cfg.keyPart() + "inflight"
}

// Admit implements Limiter.
func (l *RedisLimiter) Admit(ctx context.Context, env string) (Decision, Slot, error) {
	token := rand.Text()
	key := l.inflightKey(env)
	res, err := bounded(ctx, l.cfg.CallTimeout, func(ctx context.Context) ([]int64, error) {
		return admitScript.Run(ctx, l.rdb, []string{l.tatKey(env), key},
			l.gcra.emission, l.gcra.burst, l.cfg.Inflight, l.cfg.Lease.Microseconds(), token).Int64Slice()
	}, func() {
		// The script may have run although its answer was lost or came too
		// late: free the slot it may have taken. The TAT it may have stored
		// counts a request that does run.
		cleanupToken(ctx, l.rdb, key, token)
	})
	if err == nil && len(res) != 4 {
		err = fmt.Errorf("admit script returned %v", res)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Decision{}, noopSlot{}, fmt.Errorf("rate limit %s: %w", env, ctx.Err())
		}
		l.failOpens.Add(1)
		l.log.WarnContext(ctx, "rate limit failed open", "environment_id", env, "error", err)
		return Decision{Allowed: true, FailedOpen: true}, noopSlot{}, nil
	}
	now, tat := res[1], res[2]
	switch res[0] {
	case 0:
		return l.gcra.allowed(now, tat), l.slot(ctx, key, token), nil
	case 1:
		return l.gcra.deniedInflight(now, tat, res[3]), noopSlot{}, nil
	default:
		return l.gcra.deniedRate(now, tat), noopSlot{}, nil
	}
}

func (l *RedisLimiter) slot(ctx context.Context, key, token string) *redisSlot {
	return &redisSlot{ctx: context.WithoutCancel(ctx), rdb: l.rdb, key: key, token: token, lease: l.cfg.Lease, log: l.log}
}

// RedisFleet is the Fleet of a fleet of replicas: one sorted set of leased
// slots, "<prefix>rl:fleet:apply", decided by one script with Redis TIME. When
// Redis fails or is slower than the call timeout, Acquire fails open: the
// apply runs (a capacity limit must not turn a Redis outage into an outage of
// applies), one line is logged and FailOpens counts it.
type RedisFleet struct {
	rdb         redis.UniversalClient
	key         string
	limit       int
	lease       time.Duration
	callTimeout time.Duration
	log         *slog.Logger
	failOpens   atomic.Uint64
}

var _ Fleet = (*RedisFleet)(nil)

// NewRedisFleet returns a fleet capacity of limit concurrent slots. Zero or
// negative arguments take DefaultFleetLimit, DefaultLease and
// DefaultCallTimeout; a nil log means slog.Default().
func NewRedisFleet(rdb redis.UniversalClient, prefix string, limit int, lease, callTimeout time.Duration, log *slog.Logger) *RedisFleet {
	if limit <= 0 {
		limit = DefaultFleetLimit
	}
	if lease <= 0 {
		lease = DefaultLease
	}
	if callTimeout <= 0 {
		callTimeout = DefaultCallTimeout
	}
	if log == nil {
		log = slog.Default()
	}
	return &RedisFleet{rdb: rdb, key: prefix + "rl:fleet:apply", limit: limit, lease: lease, callTimeout: callTimeout, log: log}
}

// FailOpens counts the slots granted without a check.
func (f *RedisFleet) FailOpens() uint64 { return f.failOpens.Load() }

// Acquire implements Fleet.
func (f *RedisFleet) Acquire(ctx context.Context) (bool, time.Duration, Slot, error) {
	token := rand.Text()
	res, err := bounded(ctx, f.callTimeout, func(ctx context.Context) ([]int64, error) {
		return acquireScript.Run(ctx, f.rdb, []string{f.key}, f.limit, f.lease.Microseconds(), token).Int64Slice()
	}, func() {
		cleanupToken(ctx, f.rdb, f.key, token)
	})
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("acquire script returned %v", res)
	}
	if err != nil {
		if ctx.Err() != nil {
			return false, 0, noopSlot{}, fmt.Errorf("fleet capacity: %w", ctx.Err())
		}
		f.failOpens.Add(1)
		f.log.WarnContext(ctx, "fleet capacity failed open", "error", err)
		return true, 0, noopSlot{}, nil
	}
	if res[0] == 0 {
		return false, retryAfter(micros(res[1])), noopSlot{}, nil
	}
	slot := &redisSlot{ctx: context.WithoutCancel(ctx), rdb: f.rdb, key: f.key, token: token, lease: f.lease, log: f.log}
	return true, 0, slot, nil
}

// redisSlot is a member of a sorted set of leases.
type redisSlot struct {
	ctx      context.Context // the admitting request's values, without its cancellation
	rdb      redis.UniversalClient
	key      string
	token    string
	lease    time.Duration
	log      *slog.Logger
	released atomic.Bool
}

// Renew implements Slot.
func (s *redisSlot) Renew(ctx context.Context) error {
	if s == nil {
		return nil
	}
	if s.released.Load() {
		return ErrLeaseLost
	}
	n, err := bounded(ctx, slotTimeout, func(ctx context.Context) (int64, error) {
		return renewScript.Run(ctx, s.rdb, []string{s.key}, s.lease.Microseconds(), s.token).Int64()
	}, nil)
	if err != nil {
		return fmt.Errorf("renew slot: %w", err)
	}
	if n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Release implements Slot. A failed release is logged; the slot then frees
// itself when its lease expires.
func (s *redisSlot) Release() {
	if s == nil || s.released.Swap(true) {
		return
	}
	s.failed(releaseToken(s.ctx, s.rdb, s.key, s.token))
}

// failed logs the failed release of s (nothing when err is nil).
func (s *redisSlot) failed(err error) {
	if err != nil {
		s.log.WarnContext(s.ctx, "releasing a rate limit slot failed; its lease will end it", "key", s.key, "error", err)
	}
}

// Release releases every slot, each once as by its own Release. The slots
// of one Redis client go in one pipeline, one round trip for all: an apply
// gives back its environment's in-flight slot and a fleet slot together.
// On a cluster client the pipeline sends each node its own members.
func Release(slots ...Slot) {
	var batch []*redisSlot
	for _, s := range slots {
		rs, ok := s.(*redisSlot)
		switch {
		case !ok || rs == nil || len(batch) > 0 && batch[0].rdb != rs.rdb:
			if s != nil {
				s.Release()
			}
		case !rs.released.Swap(true):
			batch = append(batch, rs)
		}
	}
	if len(batch) == 0 {
		return
	}
	first := batch[0]
	_, err := bounded(first.ctx, slotTimeout, func(ctx context.Context) ([]redis.Cmder, error) {
		return first.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, s := range batch {
				p.ZRem(ctx, s.key, s.token)
			}
			return nil
		})
	}, nil)
	for _, s := range batch {
		s.failed(err)
	}
}

func releaseToken(ctx context.Context, rdb redis.UniversalClient, key, token string) error {
	_, err := bounded(ctx, slotTimeout, func(ctx context.Context) (int64, error) {
		return rdb.ZRem(ctx, key, token).Result()
	}, nil)
	return err
}

// cleanupToken removes the slot a failed-open call may have taken. It runs in
// the background of a request that already went on, so it may wait longer
// than a release: against a slow Redis a new connection alone takes several
// round trips. A failure is not logged: the fail-open was, and the lease
// ends the slot anyway.
func cleanupToken(ctx context.Context, rdb redis.UniversalClient, key, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = rdb.ZRem(ctx, key, token).Err()
}

// bounded runs call with a deadline of timeout and returns by then whether or
// not the client honours the deadline. When call fails, or its answer comes
// after the deadline, unknown (if not nil) runs once call has returned: the
// caller no longer knows what call did.
func bounded[T any](ctx context.Context, timeout time.Duration, call func(context.Context) (T, error), unknown func()) (T, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("redis slower than %v", timeout))
	defer cancel()
	type result struct {
		v   T
		err error
	}
	var (
		mu        sync.Mutex
		abandoned bool
	)
	done := make(chan result, 1)
	go func() {
		v, err := call(ctx)
		mu.Lock()
		left := abandoned
		if !left {
			done <- result{v, err}
		}
		mu.Unlock()
		if (left || err != nil) && unknown != nil {
			unknown()
		}
	}()
	select {
	case r := <-done:
		if r.err != nil && ctx.Err() != nil {
			r.err = context.Cause(ctx) // the client's own report of the deadline names no cause
		}
		return r.v, r.err
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		select {
		case r := <-done:
			if r.err != nil {
				r.err = context.Cause(ctx)
			}
			return r.v, r.err
		default:
			abandoned = true
			var zero T
			return zero, context.Cause(ctx)
		}
	}
}
