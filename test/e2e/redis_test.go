package e2e_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/test/testdb"
)

// redisServer is a redis-server of one test (testdb.StartRedis): its
// settings (an eviction policy) and its FLUSHDB concern no other test or
// test process.
type redisServer struct{ Addr string }

func startRedis(t *testing.T) *redisServer { return &redisServer{Addr: testdb.StartRedis(t)} }

// Client returns a client of database 0, closed when t ends.
func (r *redisServer) Client(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// URL is the server's database 0 as KEENAUTHD_REDIS_URL.
func (r *redisServer) URL() string { return "redis://" + r.Addr + "/0" }
