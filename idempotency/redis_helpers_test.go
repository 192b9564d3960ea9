package idempotency

import (
	"context"
	"crypto/rand"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testRedisAddr is the Redis the tests run against: KEENAUTH_TEST_REDIS_ADDR,
// or the local default.
func testRedisAddr() string {
	if addr := os.Getenv("KEENAUTH_TEST_REDIS_ADDR"); addr != "" {
		return addr
	}
	return "127.0.0.1:6379"
}

// newTestRedis returns a client of the test Redis (database 0, which tests
// share: each works under its own random key prefix) and that prefix. The
// keys under the prefix are deleted when the test ends; nothing else is
// touched.
func newTestRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testRedisAddr()})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		t.Fatalf("Redis at %s is not reachable (start one, or set KEENAUTH_TEST_REDIS_ADDR): %v", testRedisAddr(), err)
	}
	prefix := "test:" + rand.Text() + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleaning up %s*: %v", prefix, err)
		}
		_ = rdb.Close()
	})
	return rdb, prefix
}
