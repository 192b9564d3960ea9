package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const redisInstall = "install Redis (Debian: apt-get install -y redis-server)"

// RedisCluster is a Redis Cluster of its own for one test (or one test
// package): 6 redis-server processes, 3 masters and a replica of each, on
// free ports of 127.0.0.1, with their files in a temporary directory. Every
// process is stopped when the test that started it ends.
type RedisCluster struct {
	t     testing.TB
	dir   string
	cli   string
	mu    sync.Mutex
	nodes map[string]*Process // by address
}

// StartRedisCluster starts a cluster and waits until every node reports
// cluster_state:ok and agrees on who serves every slot.
func StartRedisCluster(t testing.TB) *RedisCluster {
	t.Helper()
	server := RequireBinary(t, "redis-server", redisInstall)
	cli := RequireBinary(t, "redis-cli", redisInstall)
	c := &RedisCluster{t: t, dir: t.TempDir(), cli: cli, nodes: map[string]*Process{}}
	var addrs []string
	for range 6 {
		addr, p := c.startNode(server)
		c.nodes[addr] = p
		addrs = append(addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("testdb: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitHealthy(t, 30*time.Second)
	return c
}

// startNode starts one cluster node on a free port (with its bus port,
// +10000, free too) and returns it once it answers as itself. A port found
// free may be taken by another process before redis-server binds it (the
// node then exits, or another server answers): it starts again on another
// port, as StartRedisServer does.
func (c *RedisCluster) startNode(server string) (string, *Process) {
	c.t.Helper()
	var last error
	for range 5 {
		port := strconv.Itoa(FreePort(c.t, 10000))
		addr := "127.0.0.1:" + port
		p := StartProcess(c.t, c.dir, server,
			"--port", port, "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes-"+port+".conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0",
			"--save", "", "--appendonly", "no", "--dbfilename", "dump-"+port+".rdb",
			"--protected-mode", "no", "--maxmemory-policy", "noeviction")
		if last = waitOwnRedis(addr, p); last == nil {
			return addr, p
		}
		p.Stop()
	}
	c.t.Fatalf("testdb: a redis-server of the cluster did not start: %v", last)
	return "", nil
}

// Addrs are the addresses of the nodes that run, in no particular order.
func (c *RedisCluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for a, p := range c.nodes {
		if !p.Exited() {
			out = append(out, a)
		}
	}
	return out
}

// URL is the cluster's KEENAUTHD_REDIS_URL: one seed node in the authority,
// the others as addr parameters.
func (c *RedisCluster) URL() string {
	addrs := c.Addrs()
	u := "redis+cluster://" + addrs[0]
	for i, a := range addrs[1:] {
		if i == 0 {
			u += "?"
		} else {
			u += "&"
		}
		u += "addr=" + a
	}
	return u
}

// Client returns a cluster client, closed when t ends.
func (c *RedisCluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), DialTimeout: 500 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true, DisableIdentity: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// ClientPrefix returns a cluster client and a key prefix of t's own; t's
// keys are deleted (on every master) when it ends.
func (c *RedisCluster) ClientPrefix(t testing.TB) (*redis.ClusterClient, string) {
	t.Helper()
	rdb := c.Client(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				node.Del(ctx, iter.Val())
			}
			return nil
		})
	})
	return rdb, prefix
}

// node is one node's view of the cluster.
type node struct {
	addr, id, role, masterID string
	slots                    int
}

// nodes reads CLUSTER NODES from addr.
func clusterNodes(addr string) ([]node, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, MaxRetries: -1, DisableIdentity: true})
	defer rdb.Close()
	txt, err := rdb.ClusterNodes(context.Background()).Result()
	if err != nil {
		return nil, err
	}
	var out []node
	for _, line := range strings.Split(strings.TrimSpace(txt), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := node{id: f[0], addr: strings.Split(f[1], "@")[0], masterID: f[3]}
		switch {
		case strings.Contains(f[2], "fail"):
			n.role = "failed"
		case strings.Contains(f[2], "master"):
			n.role = "master"
		default:
			n.role = "replica"
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue // a slot being migrated
			}
			lo, hi, found := strings.Cut(s, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if found {
				b, _ = strconv.Atoi(hi)
			}
			n.slots += b - a + 1
		}
		out = append(out, n)
	}
	return out, nil
}

// WaitHealthy waits until every running node says cluster_state:ok, every
// slot is served, and every node sees the same masters.
func (c *RedisCluster) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, "Redis Cluster healthy", func() error {
		var view string
		for _, a := range c.Addrs() {
			rdb := redis.NewClient(&redis.Options{Addr: a, DialTimeout: 500 * time.Millisecond, MaxRetries: -1, DisableIdentity: true})
			info, err := rdb.ClusterInfo(context.Background()).Result()
			rdb.Close()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
				return errorf("%s: %s", a, firstLines(info, 3))
			}
			ns, err := clusterNodes(a)
			if err != nil {
				return err
			}
			var masters []string
			for _, n := range ns {
				if n.role == "master" && n.slots > 0 {
					masters = append(masters, n.addr+"="+strconv.Itoa(n.slots))
				}
			}
			sortStrings(masters)
			v := strings.Join(masters, ",")
			if view == "" {
				view = v
			} else if v != view {
				return errorf("nodes disagree: %s vs %s", view, v)
			}
		}
		return nil
	})
}

// Masters are the addresses of the running masters that serve slots.
func (c *RedisCluster) Masters(t testing.TB) []string {
	t.Helper()
	ns, err := clusterNodes(c.Addrs()[0])
	if err != nil {
		t.Fatalf("testdb: CLUSTER NODES: %v", err)
	}
	var out []string
	for _, n := range ns {
		if n.role == "master" && n.slots > 0 {
			out = append(out, n.addr)
		}
	}
	sortStrings(out)
	return out
}

// Reshard moves n slots from the master at from to the master at to, with
// redis-cli --cluster reshard (MIGRATE of every key, ASK redirections on
// the way), and waits until the cluster is healthy again.
func (c *RedisCluster) Reshard(t testing.TB, from, to string, n int) {
	t.Helper()
	ids := map[string]string{}
	ns, err := clusterNodes(from)
	if err != nil {
		t.Fatalf("testdb: CLUSTER NODES: %v", err)
	}
	for _, x := range ns {
		ids[x.addr] = x.id
	}
	out, err := exec.Command(c.cli, "--cluster", "reshard", from, "--cluster-from", ids[from], "--cluster-to", ids[to],
		"--cluster-slots", strconv.Itoa(n), "--cluster-yes").CombinedOutput()
	if err != nil {
		t.Fatalf("testdb: redis-cli --cluster reshard: %v\n%s", err, lastLines(string(out), 20))
	}
	c.WaitHealthy(t, 30*time.Second)
}

// KillMaster kills the master at addr (SIGKILL, as a crash) and waits until
// its replica has taken its slots over and the cluster is healthy again.
func (c *RedisCluster) KillMaster(t testing.TB, addr string) {
	t.Helper()
	c.mu.Lock()
	p := c.nodes[addr]
	c.mu.Unlock()
	if p == nil {
		t.Fatalf("testdb: no node at %s", addr)
	}
	p.Kill()
	WaitFor(t, 30*time.Second, "a replica takes over from "+addr, func() error {
		for _, m := range c.Masters(t) {
			if m == addr {
				return errorf("%s still serves slots", addr)
			}
		}
		return nil
	})
	c.WaitHealthy(t, 30*time.Second)
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func sortStrings(s []string) { slices.Sort(s) }
