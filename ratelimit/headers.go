package ratelimit

import "fmt"

// PolicyHeader is the RateLimit-Policy value of §10 (IETF httpapi rate-limit
// headers draft) for cfg's policies, e.g.
//
//	"config_plan";q=30;w=60, "config_plan_inflight";q=2;qu="concurrent-requests"
//
// The window is written in whole seconds, rounded up.
func PolicyHeader(cfg Config) string {
	cfg = cfg.WithDefaults()
	return fmt.Sprintf(`"%s";q=%d;w=%d, "%s";q=%d;qu="concurrent-requests"`,
		cfg.Policy, cfg.Quota, ceilSeconds(cfg.Window), cfg.InflightPolicy(), cfg.Inflight)
}

// RateLimitHeader is the RateLimit value of §10 for a decision of cfg's
// policies, e.g.
//
//	"config_plan";r=12;t=2
//
// t is in whole seconds, rounded up. A request denied by config_plan_inflight
// adds that policy's item, whose t is the Retry-After:
//
//	"config_plan";r=12;t=2, "config_plan_inflight";r=0;t=37
//
// so the t of the denying policy always equals Retry-After. A failed-open
// decision knows nothing about the limits: the value is empty and the header
// should be left out.
func RateLimitHeader(cfg Config, d Decision) string {
	if d.FailedOpen {
		return ""
	}
	cfg = cfg.WithDefaults()
	rate, inflight := cfg.Policy, cfg.InflightPolicy()
	t := ceilSeconds(d.Reset)
	if !d.Allowed && d.Policy == rate {
		t = ceilSeconds(d.RetryAfter)
	}
	s := fmt.Sprintf(`"%s";r=%d;t=%d`, rate, d.Remaining, t)
	if !d.Allowed && d.Policy == inflight {
		s += fmt.Sprintf(`, "%s";r=0;t=%d`, inflight, ceilSeconds(d.RetryAfter))
	}
	return s
}
