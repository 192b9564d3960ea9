package main

import (
	"strings"
	"testing"
)

// TestConfigReadsThePlanCacheSize: KEENAUTHD_PLAN_CACHE_MIB is 16 unless
// set, 0 keeps no plan, and anything but a whole number of MiB is a start
// error naming it.
func TestConfigReadsThePlanCacheSize(t *testing.T) {
	t.Parallel()
	load := func(v string) (config, error) {
		return loadConfig(func(k string) string {
			if k == "KEENAUTHD_PLAN_CACHE_MIB" {
				return v
			}
			return ""
		})
	}
	for v, want := range map[string]int{"": 16, "0": 0, "64": 64} {
		if cfg, err := load(v); err != nil || cfg.PlanCacheMiB != want {
			t.Errorf("%q: %d MiB, %v; want %d", v, cfg.PlanCacheMiB, err, want)
		}
	}
	for _, v := range []string{"-1", "1.5", "16MiB"} {
		if _, err := load(v); err == nil || !strings.Contains(err.Error(), "KEENAUTHD_PLAN_CACHE_MIB") {
			t.Errorf("%q: %v", v, err)
		}
	}
}
