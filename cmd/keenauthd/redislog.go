package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// redisLog is where go-redis's own messages go (a pool that cannot dial,
// a cluster that reloads its slots): the JSON log of the serve process, or
// nowhere for the one-shot commands, which say themselves what a Redis
// failure meant. go-redis keeps one logger for the process, and its
// default writes plain lines to standard error, outside the JSON lines
// that logs must be.
var redisLog atomic.Pointer[slog.Logger]

func init() { redis.SetLogger(redisLogger{}) }

// redisLogger is go-redis's logger for the process.
type redisLogger struct{}

// Printf logs a go-redis message at debug level: while Redis is down the
// client reports every failed dial, and what each failure meant for a
// request (a rate limit failed open, a 503) is logged by the service
// itself, at warn.
func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if log := redisLog.Load(); log != nil {
		log.DebugContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
	}
}
