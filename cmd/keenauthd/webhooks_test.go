package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/plans"
)

// TestConfigReadsTheWebhookVariables (§19): both allowances default to
// false, the schedule to §19's; each variable is read, and a bad value is
// a start error naming it.
func TestConfigReadsTheWebhookVariables(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Webhooks.AllowHTTP || cfg.Webhooks.AllowPrivate || !slices.Equal(cfg.Webhooks.RetrySchedule, plans.DefaultRetrySchedule()) {
		t.Fatalf("defaults = %+v", cfg.Webhooks)
	}
	if got := plans.DefaultRetrySchedule(); !slices.Equal(got, []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
		2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}) {
		t.Fatalf("default schedule = %v", got)
	}
	env := map[string]string{"KEENAUTHD_WEBHOOK_ALLOW_HTTP": "true", "KEENAUTHD_WEBHOOK_ALLOW_PRIVATE": "true",
		"KEENAUTHD_WEBHOOK_RETRY_SCHEDULE": "1s, 2s,500ms"}
	if cfg, err = loadConfig(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if !cfg.Webhooks.AllowHTTP || !cfg.Webhooks.AllowPrivate ||
		!slices.Equal(cfg.Webhooks.RetrySchedule, []time.Duration{time.Second, 2 * time.Second, 500 * time.Millisecond}) {
		t.Fatalf("read = %+v", cfg.Webhooks)
	}
	for name, v := range map[string]string{"KEENAUTHD_WEBHOOK_ALLOW_HTTP": "yes", "KEENAUTHD_WEBHOOK_ALLOW_PRIVATE": "1",
		"KEENAUTHD_WEBHOOK_RETRY_SCHEDULE": "5s,,1m"} {
		_, err := loadConfig(func(k string) string {
			if k == name {
				return v
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: %v", name, v, err)
		}
	}
}
