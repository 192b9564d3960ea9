package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

func TestRedisStoreKeyLayoutAndRecord(t *testing.T) {
	t.Parallel()
	rdb, prefix := newTestRedis(t)
	s := NewRedisStore(rdb, prefix)
	ctx := context.Background()
	key := "weird key {with} *glob* and \"quotes\""
	sum := sha256.Sum256([]byte(key))
	redisKey := prefix + "idem:{key_01}:" + hex.EncodeToString(sum[:])

	c, err := s.Claim(ctx, "key_01", key, "fp1", 2*time.Minute)
	if err != nil || c.Outcome != Claimed {
		t.Fatalf("Claim = %+v, %v", c, err)
	}
	got, err := rdb.HGetAll(ctx, redisKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"state": "running", "fp": "fp1", "owner": c.Token}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("in-flight record at %s (-want +got):\n%s", redisKey, diff)
	}
	if ttl := rdb.PTTL(ctx, redisKey).Val(); ttl <= time.Minute || ttl > 2*time.Minute {
		t.Errorf("in-flight TTL %v, want about the 2m lease", ttl)
	}

	body := []byte("{\"id\":\"cfgp_1\"}\x00\xff binary-safe")
	resp := Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: body}
	if err := s.Complete(ctx, "key_01", key, c.Token, resp, DefaultRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got, err = rdb.HGetAll(ctx, redisKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{
		"state": "done", "fp": "fp1", "status": "200",
		"header": `{"Content-Type":"application/json"}`, "body": string(body),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("finished record (-want +got):\n%s", diff)
	}
	if ttl := rdb.PTTL(ctx, redisKey).Val(); ttl <= 23*time.Hour || ttl > 24*time.Hour {
		t.Errorf("finished TTL %v, want about 24h", ttl)
	}
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{redisKey}, keys); diff != "" {
		t.Errorf("keys written (-want +got):\n%s", diff)
	}
	r, err := s.Claim(ctx, "key_01", key, "fp1", time.Minute)
	if err != nil || r.Outcome != Replay || string(r.Response.Body) != string(body) {
		t.Fatalf("replay = %+v, %v; want the binary body back", r, err)
	}
}

func TestRedisStoreUnreachable(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{
		Addr:         "127.0.0.1:1", // nothing listens on tcpmux
		DialTimeout:  200 * time.Millisecond,
		ReadTimeout:  200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond,
		MaxRetries:   -1,
		// One dial per command: go-redis otherwise tries 5 times, 100ms apart.
		DialerRetries: 1,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	s := NewRedisStore(rdb, "test:")
	ctx := context.Background()

	start := time.Now()
	_, err := s.Claim(ctx, "key_01", "k1", "fp1", time.Minute)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Claim against a closed port: %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Claim took %v to fail, want under 1s", d)
	}
	for name, err := range map[string]error{
		"Renew":    s.Renew(ctx, "key_01", "k1", "t", time.Minute),
		"Complete": s.Complete(ctx, "key_01", "k1", "t", Response{Status: 200}, time.Minute),
		"Release":  s.Release(ctx, "key_01", "k1", "t"),
	} {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s against a closed port: %v, want ErrUnavailable", name, err)
		}
	}
	if _, _, err := CheckEvictionPolicy(ctx, rdb); !errors.Is(err, ErrUnavailable) {
		t.Errorf("CheckEvictionPolicy against a closed port: %v, want ErrUnavailable", err)
	}
}

func TestCheckEvictionPolicy(t *testing.T) {
	t.Parallel()
	rdb, _ := newTestRedis(t)
	ctx := context.Background()
	// Read only: the shared test Redis's configuration is not changed. An
	// end-to-end test elsewhere sets it for a moment, so the reading counts
	// only when the policy was the same before and after it.
	current := func() string { return rdb.ConfigGet(ctx, "maxmemory-policy").Val()["maxmemory-policy"] }
	for attempt := 0; ; attempt++ {
		before := current()
		policy, evicting, err := CheckEvictionPolicy(ctx, rdb)
		if err != nil {
			t.Fatalf("CheckEvictionPolicy: %v", err)
		}
		if after := current(); after != before && attempt < 20 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if policy != before || evicting != (before != "noeviction") {
			t.Errorf("CheckEvictionPolicy = %q, %v; Redis says %q", policy, evicting, before)
		}
		return
	}
}

func TestPolicyEvicts(t *testing.T) {
	t.Parallel()
	for policy, want := range map[string]bool{
		"noeviction":      false,
		"allkeys-lru":     true,
		"allkeys-lfu":     true,
		"allkeys-random":  true,
		"volatile-lru":    true, // every record has a TTL, so volatile-* can evict it
		"volatile-lfu":    true,
		"volatile-random": true,
		"volatile-ttl":    true,
	} {
		if got := policyEvicts(policy); got != want {
			t.Errorf("policyEvicts(%q) = %v, want %v", policy, got, want)
		}
	}
}
