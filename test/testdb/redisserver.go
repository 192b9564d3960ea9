package testdb

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartRedis starts a single (non-cluster) redis-server of t's own on a free
// port of 127.0.0.1, without persistence, in a temporary directory, and
// returns its address once it answers; its settings (an eviction policy) and
// its FLUSHDB concern no other test or test process. A port found free may be
// taken by another process before redis-server binds it, so the server that
// answers is checked to be this one (by process id); if it is not, it starts
// again on another port.
func StartRedis(t testing.TB, extra ...string) string {
	t.Helper()
	return StartRedisServer(t, extra...).Addr
}

// RedisServer is a redis-server of a test's own that the test may kill and
// start again on the same address.
type RedisServer struct {
	Addr string
	t    testing.TB
	dir  string
	path string
	args []string
	mu   sync.Mutex
	p    *Process
}

// StartRedisServer starts a redis-server as StartRedis does and returns it.
func StartRedisServer(t testing.TB, extra ...string) *RedisServer {
	t.Helper()
	server := RequireBinary(t, "redis-server", redisInstall)
	dir := t.TempDir()
	var last error
	for range 5 {
		port := strconv.Itoa(FreePort(t, 0))
		addr := net.JoinHostPort("127.0.0.1", port)
		args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no"}, extra...)
		p := StartProcess(t, dir, server, args...)
		if last = waitOwnRedis(addr, p); last == nil {
			return &RedisServer{Addr: addr, t: t, dir: dir, path: server, args: args, p: p}
		}
		p.Stop()
	}
	t.Fatalf("testdb: redis-server did not start: %v", last)
	return nil
}

// Kill ends the server with SIGKILL: its data (it keeps none on disk) and
// every connection are gone at once.
func (r *RedisServer) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p.Kill()
}

// Restart starts the killed server again on its address, empty. The port was
// this server's a moment ago, but another process may bind it in between:
// that is reported as an error rather than a server of another's answering.
func (r *RedisServer) Restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last error
	for range 50 {
		p := StartProcess(r.t, r.dir, r.path, r.args...)
		if last = waitOwnRedis(r.Addr, p); last == nil {
			r.p = p
			return nil
		}
		p.Stop()
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("testdb: redis-server did not start again on %s: %w", r.Addr, last)
}

// waitOwnRedis polls addr until the redis-server of p answers, for 20 s at
// most or until p exits.
func waitOwnRedis(addr string, p *Process) error {
	want := strconv.Itoa(p.cmd.Process.Pid)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if p.Exited() {
			return fmt.Errorf("redis-server on %s exited: %s", addr, lastLines(p.Output(), 5))
		}
		pid, err := redisPID(addr)
		if err == nil {
			if pid == want {
				return nil
			}
			return fmt.Errorf("%s is served by another redis-server (process %s)", addr, pid)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer within 20s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisPID is the process id that the redis-server at addr reports. It dials
// plainly first: the Redis client logs every dial it fails.
func redisPID(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return "", err
	}
	conn.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1, DisableIdentity: true})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("INFO server of %s has no process_id", addr)
}
