package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server of one test: its settings (an eviction
// policy) and its FLUSHDB concern no other test or test process.
type redisServer struct {
	Addr string
	dir  string
}

// startRedis runs a redis-server on a free port of 127.0.0.1, without
// persistence, in a temporary directory, until t ends. It waits until the
// server answers, and checks that the server answering is this one (a port
// found free may be taken by another process before redis-server binds it;
// then it starts again on another port).
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server: %v (the e2e tests run their own; see README)", err)
	}
	dir := t.TempDir()
	var last string
	for range 5 {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", "redis.log", "--daemonize", "no")
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		if err := waitRedis(addr, cmd.Process.Pid, exited); err != nil {
			stopProcess(cmd, exited)
			last = fmt.Sprintf("%v\n%s", err, readLog(dir))
			continue
		}
		t.Cleanup(func() { stopProcess(cmd, exited) })
		return &redisServer{Addr: addr, dir: dir}
	}
	t.Fatalf("redis-server did not start: %s", last)
	return nil
}

// Client returns a client of database 0, closed when t ends.
func (r *redisServer) Client(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// URL is the server's database 0 as KEENAUTHD_REDIS_URL.
func (r *redisServer) URL() string { return "redis://" + r.Addr + "/0" }

// waitRedis polls addr until the redis-server of process pid answers, for
// 20 s at most or until the process exits.
func waitRedis(addr string, pid int, exited <-chan struct{}) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited", addr)
		default:
		}
		// A plain dial first: the client logs every dial it fails.
		var info string
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err = rdb.Info(ctx, "server").Result()
			cancel()
		}
		if err == nil {
			if infoField(info, "process_id") == strconv.Itoa(pid) {
				return nil
			}
			return fmt.Errorf("%s is served by another redis-server (process %s)", addr, infoField(info, "process_id"))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer within 20s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// stopProcess ends cmd with SIGTERM, then SIGKILL after 10 s.
func stopProcess(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func readLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	return string(b)
}
