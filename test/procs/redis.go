package procs

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/test/testdb"
)

// RedisServer is a redis-server of one test (testdb.StartRedis): its
// settings (an eviction policy) and its FLUSHDB concern no other test or
// test process.
type RedisServer struct{ *testdb.RedisServer }

// StartRedis runs a redis-server of t's own until t ends (see
// testdb.StartRedis, which checks that the server answering is this one).
func StartRedis(t testing.TB) *RedisServer { return &RedisServer{testdb.StartRedisServer(t)} }

// Client returns a client of database 0, closed when t ends.
func (r *RedisServer) Client(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// URL is the server's database 0 as KEENAUTHD_REDIS_URL.
func (r *RedisServer) URL() string { return "redis://" + r.Addr + "/0" }
