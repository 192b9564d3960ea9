package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/ratelimit"
)

// The live event stream (§19): GET /v1/config-events/stream answers
// text/event-stream, its headers flushed at once, then one message per
// plan event of the environment that the key may read, in the feed's order
// (plans.Feed). A stream reads the feed when it is woken — a commit of
// events in this process, or a message on the fleet's Redis channel from
// another — and every second besides, so that an event reaches every
// replica's streams within a second even when Redis is down. At most
// StreamSettings.Limit streams of an environment run at once across the
// fleet: a slot each, leased in Redis (a killed replica's slots free
// themselves when their lease ends), held in the process without Redis.

// PolicyEventStreams is the policy of the streams' limit in a 429.
const PolicyEventStreams = "config_events_stream"

// StreamSettings are the live stream's. Zero values mean the defaults.
type StreamSettings struct {
	// Heartbeat is the interval of the comment line that keeps proxies
	// from closing an idle stream (15 s).
	Heartbeat time.Duration
	// Poll is how often a stream reads the feed without being woken (1 s).
	Poll time.Duration
	// Limit bounds the streams of one environment across the fleet (10).
	Limit int
	// Lease is how long a stream's slot outlives a process that died
	// without releasing it (30 s); it is renewed every third of it.
	Lease time.Duration
}

// Defaults of StreamSettings.
const (
	DefaultStreamHeartbeat = 15 * time.Second
	DefaultStreamPoll      = time.Second
	DefaultStreamLimit     = 10
	DefaultStreamLease     = 30 * time.Second
)

// WithDefaults fills the zero values.
func (s StreamSettings) WithDefaults() StreamSettings {
	if s.Heartbeat <= 0 {
		s.Heartbeat = DefaultStreamHeartbeat
	}
	if s.Poll <= 0 {
		s.Poll = DefaultStreamPoll
	}
	if s.Limit <= 0 {
		s.Limit = DefaultStreamLimit
	}
	if s.Lease <= 0 {
		s.Lease = DefaultStreamLease
	}
	return s
}

// streamWriteWait bounds each write of a stream: a client that stops
// reading is cut off after it, whatever the server's WriteTimeout (which
// would otherwise end every stream after it).
const streamWriteWait = 30 * time.Second

// EventsChannel is the Redis channel on which the replicas of the fleet
// under prefix name the environments that have new plan events.
func EventsChannel(prefix string) string { return prefix + "config-events" }

// EventHub wakes the streams of an environment when events of it commit:
// in this process at once, in the others through Redis.
type EventHub struct {
	rdb    redis.UniversalClient
	prefix string
	log    *slog.Logger

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	// slots are the streams' slots of each environment without Redis.
	slots map[string]ratelimit.Fleet
}

// NewEventHub returns the hub of one process (rdb nil: no other process).
func NewEventHub(rdb redis.UniversalClient, prefix string, log *slog.Logger) *EventHub {
	if log == nil {
		log = slog.Default()
	}
	return &EventHub{rdb: rdb, prefix: prefix, log: log, subs: map[string]map[chan struct{}]struct{}{}, slots: map[string]ratelimit.Fleet{}}
}

// Committed is configdb's follower of committed events: it wakes this
// process's streams of envIDs and tells the other processes.
func (h *EventHub) Committed(envIDs []string) {
	h.wake(envIDs...)
	if h.rdb == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
		defer cancel()
		for _, env := range envIDs {
			if err := h.rdb.Publish(ctx, EventsChannel(h.prefix), env).Err(); err != nil {
				h.log.Debug("config events: the other processes could not be woken; their streams read the feed within a second", "error", err)
				return
			}
		}
	}()
}

// Follow wakes this process's streams of every environment named on the
// fleet's channel, until ctx ends. When the subscription is (re)made, every
// stream is woken: what was published while nobody listened is read.
func (h *EventHub) Follow(ctx context.Context) {
	if h.rdb == nil {
		return
	}
	follow(ctx, h.rdb, EventsChannel(h.prefix), subscriber{subscribed: h.wakeAll, message: func(env string) { h.wake(env) }})
}

func (h *EventHub) wake(envIDs ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, env := range envIDs {
		for ch := range h.subs[env] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

func (h *EventHub) wakeAll() {
	h.mu.Lock()
	envs := make([]string, 0, len(h.subs))
	for env := range h.subs {
		envs = append(envs, env)
	}
	h.mu.Unlock()
	h.wake(envs...)
}

// subscribe returns a channel that is sent to when events of env commit.
func (h *EventHub) subscribe(env string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[env] == nil {
		h.subs[env] = map[chan struct{}]struct{}{}
	}
	h.subs[env][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[env], ch)
		if len(h.subs[env]) == 0 {
			delete(h.subs, env)
		}
		h.mu.Unlock()
	}
}

// streamSlots are the slots of env's streams.
func (h *EventHub) streamSlots(env string, st StreamSettings) ratelimit.Fleet {
	if h.rdb != nil {
		return ratelimit.NewRedisSlots(h.rdb, h.prefix+"rl:{"+env+"}:config-events-streams", st.Limit, st.Lease, 0, h.log)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.slots[env]
	if !ok {
		f = ratelimit.NewMemoryFleet(st.Limit)
		h.slots[env] = f
	}
	return f
}

func (s *Server) listConfigEvents(c *gin.Context) {
	listed(s, c, config.PrefixEvent, func(ctx context.Context, lp plans.ListParams) (plans.Page[plans.FeedItem], error) {
		return s.d.Feed.List(ctx, actor(c), lp)
	})
}

// streamConfigEvents serves GET /v1/config-events/stream.
func (s *Server) streamConfigEvents(c *gin.Context) {
	a := actor(c)
	ctx := c.Request.Context()
	cur, err := s.d.Feed.Start(ctx, a, strings.TrimSpace(c.GetHeader("Last-Event-ID")))
	if err != nil {
		s.fail(c, err)
		return
	}
	ok, retry, slot, err := s.d.Events.streamSlots(a.EnvironmentID, s.streams).Acquire(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	// The §10 headers of the streams' limit, a concurrency policy like
	// config_plan_inflight: its quota on every answer, and on a 429 the
	// RateLimit item whose t is the Retry-After.
	c.Header("RateLimit-Policy", fmt.Sprintf(`"%s";q=%d;qu="concurrent-requests"`, PolicyEventStreams, s.streams.Limit))
	if !ok {
		secs := max(int(math.Ceil(retry.Seconds())), 1)
		c.Header("RateLimit", fmt.Sprintf(`"%s";r=0;t=%d`, PolicyEventStreams, secs))
		s.fail(c, &config.Error{Code: config.CodeRateLimited,
			Detail: fmt.Sprintf("this environment has %d live event streams open already; retry in %d s", s.streams.Limit, secs),
			Extra:  map[string]any{"retry_after": secs, "policy": PolicyEventStreams}})
		return
	}
	stopHolding := ratelimit.Hold(slot, s.streams.Lease/3, nil)
	defer func() {
		stopHolding()
		slot.Release()
	}()
	wake, unsubscribe := s.d.Events.subscribe(a.EnvironmentID)
	defer unsubscribe()

	rc := http.NewResponseController(c.Writer)
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteWait))
		if _, err := c.Writer.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	if !send([]byte(": stream of the plan events of " + a.EnvironmentID + "\n\n")) {
		return
	}
	secret, _ := bearer(c.GetHeader("Authorization"))
	poll := time.NewTicker(s.streams.Poll)
	defer poll.Stop()
	heartbeat := time.NewTicker(s.streams.Heartbeat)
	defer heartbeat.Stop()
	var frame bytes.Buffer
	for {
		msgs, read, err := s.d.Feed.Next(ctx, a, &cur)
		if err != nil && ctx.Err() == nil {
			// The next read tries again: the stream outlives a short
			// outage of the database.
			s.d.Log.WarnContext(ctx, "config events: the feed could not be read", "request_id", requestID(c), "error", err)
		}
		for _, m := range msgs {
			frame.Reset()
			writeFrame(&frame, m)
			if !send(frame.Bytes()) {
				return
			}
		}
		if read == plans.FeedBatch {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-poll.C:
			// A stream ends with its key: a revoked key stops working
			// within a second (§2), and the process's drain ends it.
			if _, err := s.d.Keys.Authenticate(ctx, strings.TrimSpace(secret)); err != nil || (s.d.Draining != nil && s.d.Draining()) {
				return
			}
		case <-heartbeat.C:
			if !send([]byte(": keep-alive\n\n")) {
				return
			}
		}
	}
}

// writeFrame writes m as a server-sent event: its id, its type and its
// data on one line.
func writeFrame(b *bytes.Buffer, m plans.Message) {
	data, _ := json.Marshal(m.Data) // compact: no line break
	b.WriteString("id: ")
	b.WriteString(m.ID)
	b.WriteString("\nevent: ")
	b.WriteString(m.Type)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
}
