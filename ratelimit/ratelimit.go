// Package ratelimit holds the admission limits of §10: the config_plan rate
// limit (GCRA, per environment), the config_plan_inflight concurrency limit
// (leased slots, per environment) and the fleet-wide capacity of concurrent
// applies. The Redis implementations serve production replicas; the memory
// implementations have the same semantics for dev mode and tests.
//
// # GCRA
//
// All times are integer microseconds. With quota Q per window W:
//
//	T   = floor(W / Q)        emission interval (at least 1µs)
//	L   = Q * T               burst window (τ + T, with tolerance τ = (Q-1)·T)
//	tat = max(storedTAT, now) theoretical arrival time; a missing key means now
//
// A request at now is allowed when tat + T - L <= now; it then stores
// newTAT = tat + T (with a TTL of newTAT - now, after which the key means a
// full quota). A fresh state therefore allows exactly Q requests at once, then
// one per T. A denied request stores nothing.
//
// The header values are derived from the TAT after the request (newTAT when
// allowed, the unchanged tat when denied):
//
//	r = floor((now + L - tat) / T)       requests left now, 0 ≤ r ≤ Q
//	t = tat - now                        when r > 0: until the full quota is back
//	t = tat + T - L - now                when r = 0: until the next request is allowed
//
// Example, 3 per 3s (T = 1s, L = 3s), three requests at once: r = 2, 1, 0 with
// t = 1s, 2s, 1s; a fourth is denied with t = Retry-After = 1s.
//
// # Failing open
//
// A Redis error, or a Redis slower than Config.CallTimeout, never denies a
// request: the Redis limiter and fleet answer "allowed" with a no-op Slot, log
// one line with the cause and count it (FailOpens, for the service's metric).
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Policy names, as in the RateLimit-Policy header and the 429 body.
const (
	PolicyConfigPlan = "config_plan"
	PolicyInflight   = "config_plan_inflight"
	// The previews of plan creation (§14) have limits of their own.
	PolicyPreview         = "config_preview"
	PolicyPreviewInflight = "config_preview_inflight"
)

// Defaults of Config and of the fleet capacity (§11), and of a Config of
// PolicyPreview (§14).
const (
	DefaultQuota           = 30
	DefaultWindow          = 60 * time.Second
	DefaultInflight        = 2
	DefaultPreviewQuota    = 120
	DefaultPreviewInflight = 4
	DefaultLease           = 120 * time.Second // twice the default apply lease
	DefaultCallTimeout     = 150 * time.Millisecond
	DefaultFleetLimit      = 64
)

// slotTimeout bounds Renew and Release. It is longer than a call on the
// request path: nobody waits on a release, and a lost release keeps the slot
// busy for a whole lease.
const slotTimeout = time.Second

// cleanupTimeout bounds the background removal of a slot that a failed-open
// call may have taken (see RedisLimiter.Admit).
const cleanupTimeout = 3 * time.Second

// ErrLeaseLost reports that a slot's lease expired (or the slot was released)
// before Renew: the slot may already belong to another request.
var ErrLeaseLost = errors.New("ratelimit: lease lost")

// Config sets the limits of one deployment. Zero fields take their defaults.
type Config struct {
	// Policy names the rate policy (default PolicyConfigPlan, or
	// PolicyPreview); its concurrency policy is Policy + "_inflight". The
	// state of each policy is kept apart.
	Policy      string
	Quota       int           // requests per Window
	Window      time.Duration // the rate policy's window
	Inflight    int           // concurrent requests per environment
	Lease       time.Duration // lease of an in-flight slot, renewed by its holder
	CallTimeout time.Duration // deadline of one Redis call
}

// WithDefaults returns c with every zero or negative field set to its
// default, those of its policy for Quota and Inflight.
func (c Config) WithDefaults() Config {
	if c.Policy == "" {
		c.Policy = PolicyConfigPlan
	}
	quota, inflight := DefaultQuota, DefaultInflight
	if c.Policy == PolicyPreview {
		quota, inflight = DefaultPreviewQuota, DefaultPreviewInflight
	}
	if c.Quota <= 0 {
		c.Quota = quota
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Inflight <= 0 {
		c.Inflight = inflight
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	return c
}

// InflightPolicy is the name of c's concurrency policy.
func (c Config) InflightPolicy() string {
	return c.WithDefaults().Policy + "_inflight"
}

// keyPart is the part of the policy in a Redis key of an environment:
// none for config_plan (the keys it always had), the policy's name for
// the others.
func (c Config) keyPart() string {
	if p := c.WithDefaults().Policy; p != PolicyConfigPlan {
		return p + ":"
	}
	return ""
}

// Decision is the answer of Limiter.Admit.
type Decision struct {
	Allowed bool
	// Policy names the denying policy (PolicyConfigPlan or PolicyInflight);
	// empty when allowed.
	Policy string
	// Remaining is r of config_plan: requests left now, after this one when
	// allowed. A request denied by config_plan_inflight leaves it untouched.
	Remaining int
	// Reset is t of config_plan: until the full quota is back, or, when
	// Remaining is 0, until the next request is allowed.
	Reset time.Duration
	// RetryAfter is set when denied: whole seconds, at least one. For
	// config_plan it equals Reset rounded up; for config_plan_inflight it is the
	// time until the earliest live slot's lease expires.
	RetryAfter time.Duration
	// FailedOpen reports that Redis failed or was too slow: the request is
	// allowed without a check and the other fields are zero.
	FailedOpen bool
}

// Slot is an admitted request's hold on a concurrency slot. Admit and Acquire
// always return a non-nil Slot; a denied or failed-open request's Slot does
// nothing.
type Slot interface {
	// Renew extends the lease to a full lease from now. It returns
	// ErrLeaseLost when the lease already expired or the slot was released.
	Renew(ctx context.Context) error
	// Release frees the slot. It runs even when the request's context is gone
	// and is idempotent.
	Release()
}

// Limiter admits plan creations and applies of one environment.
type Limiter interface {
	// Admit checks config_plan_inflight, then config_plan, in one atomic
	// step. A denied request consumes nothing. When allowed, the request holds
	// one in-flight slot until it releases it or its lease expires.
	//
	// The error is non-nil only when ctx is done (the caller gave up); a
	// storage failure is never an error but an allowed, FailedOpen decision.
	Admit(ctx context.Context, env string) (Decision, Slot, error)
}

// Fleet is the fleet-wide capacity of concurrent applies.
type Fleet interface {
	// Acquire takes one of the fleet's slots. Past the limit, ok is false and
	// retryAfter (at least one second) says when to try again. The error is
	// non-nil only when ctx is done; a storage failure grants the slot.
	Acquire(ctx context.Context) (ok bool, retryAfter time.Duration, slot Slot, err error)
}

// Hold renews slot every interval until stop is called. When a renewal
// reports ErrLeaseLost, Hold calls onLost (if not nil) and stops renewing;
// other errors are retried at the next tick. stop waits for a renewal in
// progress and does not release the slot. every must be positive; a third of
// the lease leaves room for two failed renewals.
func Hold(slot Slot, every time.Duration, onLost func()) (stop func()) {
	if every <= 0 {
		panic(fmt.Sprintf("ratelimit: Hold interval %v is not positive", every))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := slot.Renew(ctx); errors.Is(err, ErrLeaseLost) {
					if onLost != nil {
						onLost()
					}
					return
				}
			}
		}
	}()
	return sync.OnceFunc(func() {
		cancel()
		<-done
	})
}

// NoSlot holds nothing: the Slot of a request that no limiter checks.
var NoSlot Slot = noopSlot{}

// noopSlot is the Slot of a denied or failed-open request.
type noopSlot struct{}

func (noopSlot) Renew(context.Context) error { return nil }
func (noopSlot) Release()                    {}

// gcra holds the GCRA parameters in microseconds (see the package comment),
// and the names of the policies it decides.
type gcra struct {
	quota    int64
	emission int64 // T
	burst    int64 // L = quota * T

	rate, inflight string
}

func newGCRA(cfg Config) gcra {
	cfg = cfg.WithDefaults()
	q := int64(cfg.Quota)
	t := max(cfg.Window.Microseconds()/q, 1)
	return gcra{quota: q, emission: t, burst: q * t, rate: cfg.Policy, inflight: cfg.InflightPolicy()}
}

// admit decides a request at now against the stored TAT (0 when missing).
func (g gcra) admit(now, tat int64) (ok bool, newTAT int64) {
	tat = max(tat, now)
	newTAT = tat + g.emission
	return newTAT-g.burst <= now, newTAT
}

// state returns r and t at now for a TAT.
func (g gcra) state(now, tat int64) (remaining int, reset int64) {
	tat = max(tat, now)
	r := min(max((now+g.burst-tat)/g.emission, 0), g.quota)
	if r > 0 {
		return int(r), tat - now
	}
	return 0, max(tat+g.emission-g.burst-now, 0)
}

// allowed builds the decision of an allowed request; tat is the new TAT.
func (g gcra) allowed(now, tat int64) Decision {
	r, t := g.state(now, tat)
	return Decision{Allowed: true, Remaining: r, Reset: micros(t)}
}

// deniedRate builds the decision of a request denied by config_plan; tat is
// the unchanged TAT.
func (g gcra) deniedRate(now, tat int64) Decision {
	r, t := g.state(now, tat)
	return Decision{Policy: g.rate, Remaining: r, Reset: micros(t), RetryAfter: retryAfter(micros(t))}
}

// maxInflightWait caps the Retry-After of config_plan_inflight: a lease
// only bounds how long a dead holder keeps its slot, while live holders
// release theirs within seconds, so a client is told to come back soon.
const maxInflightWait = 2 * time.Second

// deniedInflight builds the decision of a request denied by
// config_plan_inflight; free is when the earliest live lease expires.
func (g gcra) deniedInflight(now, tat, free int64) Decision {
	r, t := g.state(now, tat)
	return Decision{Policy: g.inflight, Remaining: r, Reset: micros(t), RetryAfter: retryAfter(min(micros(free-now), maxInflightWait))}
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// retryAfter rounds a wait up to whole seconds, at least one.
func retryAfter(d time.Duration) time.Duration {
	return max(time.Duration(ceilSeconds(d))*time.Second, time.Second)
}

// ceilSeconds rounds d up to whole seconds; 0 for d ≤ 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
