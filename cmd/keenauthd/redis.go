package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterURLForm is the URL form of a Redis Cluster, for the start errors.
const clusterURLForm = "redis+cluster://[user:pass@]host1:port1?addr=host2:port2&addr=… (rediss+cluster:// for TLS)"

// newRedis builds the client of KEENAUTHD_REDIS_URL: one node for redis://
// and rediss://, a cluster client for redis+cluster:// and rediss+cluster://
// (seed nodes; MOVED/ASK, resharding and failover are the client's). Either
// fails fast when Redis is down: one dial attempt with short timeouts, so a
// claim answers 503 promptly.
func newRedis(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("KEENAUTHD_REDIS_URL: %w", err)
	}
	scheme, cluster := strings.CutSuffix(u.Scheme, "+cluster")
	if !cluster {
		opt, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("KEENAUTHD_REDIS_URL: %w", err)
		}
		opt.DialTimeout = 500 * time.Millisecond
		opt.ReadTimeout = time.Second
		opt.WriteTimeout = time.Second
		opt.MaxRetries = 1
		opt.DialerRetries = 1
		opt.ContextTimeoutEnabled = true
		return redis.NewClient(opt), nil
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		return nil, fmt.Errorf("KEENAUTHD_REDIS_URL: a Redis Cluster has only database 0: remove the /%s path (%s)", p, clusterURLForm)
	}
	u.Scheme = scheme
	opt, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("KEENAUTHD_REDIS_URL: %w (%s)", err, clusterURLForm)
	}
	opt.DialTimeout = 500 * time.Millisecond
	opt.ReadTimeout = time.Second
	opt.WriteTimeout = time.Second
	opt.DialerRetries = 1
	opt.ContextTimeoutEnabled = true
	return redis.NewClusterClient(opt), nil
}

// errClusterMember: a single-node URL names a member of a Redis Cluster.
var errClusterMember = errors.New("KEENAUTHD_REDIS_URL names a member of a Redis Cluster with a single-node URL: " +
	"keys on the other nodes would answer MOVED (idempotency 503, rate limits failing open); use " + clusterURLForm)

// checkRedisMode refuses a single-node client pointed at a cluster member
// (CLUSTER INFO answers there; a standalone server refuses the command). A
// Redis that cannot be reached at start is not refused: requests answer 503
// (idempotency) or fail open (rate limits) until it is back, as at any time.
func checkRedisMode(ctx context.Context, rdb redis.UniversalClient) (reachable bool, err error) {
	if _, isCluster := rdb.(*redis.ClusterClient); isCluster {
		return rdb.Ping(ctx).Err() == nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := rdb.ClusterInfo(ctx).Result()
	var rerr redis.Error
	switch {
	case err == nil && strings.Contains(info, "cluster_state:"):
		return true, errClusterMember
	case errors.As(err, &rerr):
		return true, nil // "ERR This instance has cluster support disabled"
	case err != nil:
		return false, nil
	}
	return true, nil
}
