package ratelimit

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/test/testdb"
)

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

// newTestRedis returns a client of the test Redis and a key prefix of the
// test's own, whose keys are deleted when the test ends.
func newTestRedis(t *testing.T) (*redis.Client, string) { return testdb.Redis(t) }
