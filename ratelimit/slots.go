package ratelimit

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// NewRedisSlots returns limit concurrent slots under key, leased as the
// fleet's apply slots are (a slot of a process that died frees itself when
// its lease ends). It bounds what is held across replicas, such as the live
// event streams of one environment (§19); key should carry the
// environment's hash tag ({env_…}) for Redis Cluster.
func NewRedisSlots(rdb redis.UniversalClient, key string, limit int, lease, callTimeout time.Duration, log *slog.Logger) *RedisFleet {
	f := NewRedisFleet(rdb, "", limit, lease, callTimeout, log)
	f.key = key
	return f
}
