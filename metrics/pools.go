package metrics

import (
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
)

// RegisterDB exposes the statistics of the database's connection pool
// (go_sql_* with db_name).
func (m *Metrics) RegisterDB(db *sql.DB, name string) {
	m.reg.MustRegister(collectors.NewDBStatsCollector(db, name))
}

// RedisPool is what the Redis clients expose of their connection pool.
type RedisPool interface{ PoolStats() *redis.PoolStats }

// RegisterRedis exposes the statistics of a Redis client's connection pool.
func (m *Metrics) RegisterRedis(p RedisPool) {
	m.reg.MustRegister(redisCollector{p})
}

var (
	redisHits = prometheus.NewDesc(namespace+"_redis_pool_hits_total",
		"Times a free connection was found in the Redis pool.", nil, nil)
	redisMisses = prometheus.NewDesc(namespace+"_redis_pool_misses_total",
		"Times no free connection was found in the Redis pool.", nil, nil)
	redisTimeouts = prometheus.NewDesc(namespace+"_redis_pool_timeouts_total",
		"Times waiting for a Redis connection timed out.", nil, nil)
	redisWaits = prometheus.NewDesc(namespace+"_redis_pool_waits_total",
		"Times a request waited for a Redis connection.", nil, nil)
	redisWaitSeconds = prometheus.NewDesc(namespace+"_redis_pool_wait_seconds_total",
		"Time spent waiting for Redis connections.", nil, nil)
	redisStale = prometheus.NewDesc(namespace+"_redis_pool_stale_connections_total",
		"Stale connections removed from the Redis pool.", nil, nil)
	redisConns = prometheus.NewDesc(namespace+"_redis_pool_connections",
		"Connections of the Redis pool by state: total or idle.", []string{"state"}, nil)
)

type redisCollector struct{ p RedisPool }

func (c redisCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{redisHits, redisMisses, redisTimeouts, redisWaits, redisWaitSeconds, redisStale, redisConns} {
		ch <- d
	}
}

func (c redisCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.PoolStats()
	if s == nil {
		return
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	counter(redisHits, float64(s.Hits))
	counter(redisMisses, float64(s.Misses))
	counter(redisTimeouts, float64(s.Timeouts))
	counter(redisWaits, float64(s.WaitCount))
	counter(redisWaitSeconds, float64(s.WaitDurationNs)/1e9)
	counter(redisStale, float64(s.StaleConns))
	ch <- prometheus.MustNewConstMetric(redisConns, prometheus.GaugeValue, float64(s.TotalConns), "total")
	ch <- prometheus.MustNewConstMetric(redisConns, prometheus.GaugeValue, float64(s.IdleConns), "idle")
}
