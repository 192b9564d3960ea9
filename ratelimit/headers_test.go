package ratelimit

import (
	"testing"
	"time"
)

func TestPolicyHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, `"config_plan";q=30;w=60, "config_plan_inflight";q=2;qu="concurrent-requests"`},
		{Config{Quota: 100, Window: time.Hour, Inflight: 5}, `"config_plan";q=100;w=3600, "config_plan_inflight";q=5;qu="concurrent-requests"`},
		{Config{Quota: 3, Window: 1500 * time.Millisecond}, `"config_plan";q=3;w=2, "config_plan_inflight";q=2;qu="concurrent-requests"`},
		{Config{Policy: PolicyPreview}, `"config_preview";q=120;w=60, "config_preview_inflight";q=4;qu="concurrent-requests"`},
	}
	for _, tt := range tests {
		if got := PolicyHeader(tt.cfg); got != tt.want {
			t.Errorf("PolicyHeader(%+v) = %s, want %s", tt.cfg, got, tt.want)
		}
	}
}

func TestRateLimitHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Decision
		want string
	}{
		{"allowed", Decision{Allowed: true, Remaining: 12, Reset: 2 * time.Second}, `"config_plan";r=12;t=2`},
		{"tRoundedUp", Decision{Allowed: true, Remaining: 12, Reset: 1001 * time.Millisecond}, `"config_plan";r=12;t=2`},
		{"fullQuota", Decision{Allowed: true, Remaining: 30}, `"config_plan";r=30;t=0`},
		{"lastRequest", Decision{Allowed: true, Remaining: 0, Reset: 300 * time.Millisecond}, `"config_plan";r=0;t=1`},
		{"deniedByRate", Decision{Policy: PolicyConfigPlan, Reset: 1200 * time.Millisecond, RetryAfter: 2 * time.Second}, `"config_plan";r=0;t=2`},
		{"deniedByInflight", Decision{Policy: PolicyInflight, Remaining: 7, Reset: 40 * time.Second, RetryAfter: 37 * time.Second},
			`"config_plan";r=7;t=40, "config_plan_inflight";r=0;t=37`},
		{"failedOpen", Decision{Allowed: true, FailedOpen: true}, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RateLimitHeader(Config{}, tt.d); got != tt.want {
				t.Errorf("RateLimitHeader = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRateLimitHeaderOfThePreviewPolicies(t *testing.T) {
	t.Parallel()
	cfg := Config{Policy: PolicyPreview}
	for d, want := range map[Decision]string{
		{Allowed: true, Remaining: 119, Reset: 500 * time.Millisecond}:                                 `"config_preview";r=119;t=1`,
		{Policy: PolicyPreview, Reset: 400 * time.Millisecond, RetryAfter: time.Second}:                `"config_preview";r=0;t=1`,
		{Policy: PolicyPreviewInflight, Remaining: 3, Reset: time.Second, RetryAfter: 2 * time.Second}: `"config_preview";r=3;t=1, "config_preview_inflight";r=0;t=2`,
	} {
		if got := RateLimitHeader(cfg, d); got != want {
			t.Errorf("RateLimitHeader(%+v) = %s, want %s", d, got, want)
		}
	}
}
