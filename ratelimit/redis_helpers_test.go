package ratelimit

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"net"
	"os"
	"sync"
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
	rdb := redis.NewClient(&redis.Options{Addr: testRedisAddr(), ContextTimeoutEnabled: true})
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

// newClient returns a client of addr, closed when the test ends. It skips
// CLIENT SETINFO, so opening a connection costs one round trip (HELLO).
func newClient(t *testing.T, addr string, contextTimeouts bool) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: contextTimeouts, DisableIdentity: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// logBuffer collects log lines; fail-open cleanups may log after the test
// reads it, hence the lock.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTestLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// slowProxy forwards TCP connections to the test Redis and holds every chunk
// of Redis's answers for delay before passing it on: a Redis that answers
// slowly. Requests pass at once, so the commands do run.
func slowProxy(t *testing.T, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", testRedisAddr())
			if err != nil {
				_ = down.Close()
				continue
			}
			track(down)
			track(up)
			wg.Add(2)
			go func() { defer wg.Done(); pipe(up, down, 0) }()
			go func() { defer wg.Done(); pipe(down, up, delay) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// pipe copies src to dst, holding each chunk for delay.
func pipe(dst, src net.Conn, delay time.Duration) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			time.Sleep(delay)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
