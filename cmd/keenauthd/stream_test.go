package main

import (
	"strings"
	"testing"
	"time"
)

// TestConfigReadsTheStreamLease (§19): KEENAUTHD_STREAM_LEASE defaults to
// 30 s; a value is read, and one that is not a positive duration is a start
// error naming it.
func TestConfigReadsTheStreamLease(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StreamLease != 30*time.Second {
		t.Fatalf("default lease = %s", cfg.StreamLease)
	}
	if cfg, err = loadConfig(func(k string) string {
		if k == "KEENAUTHD_STREAM_LEASE" {
			return "4500ms"
		}
		return ""
	}); err != nil || cfg.StreamLease != 4500*time.Millisecond {
		t.Fatalf("lease = %s, %v", cfg.StreamLease, err)
	}
	for _, v := range []string{"0s", "-1s", "30"} {
		_, err := loadConfig(func(k string) string {
			if k == "KEENAUTHD_STREAM_LEASE" {
				return v
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), "KEENAUTHD_STREAM_LEASE") {
			t.Errorf("KEENAUTHD_STREAM_LEASE=%q: %v", v, err)
		}
	}
}
