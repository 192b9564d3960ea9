package service

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keenauth/configplans/config"
)

// Body limits of §2.
const (
	planBodyLimit    = 12 << 20
	defaultBodyLimit = 4 << 20
)

// smallBody is the size up to which a body is read without the body budget:
// the bodies of applies, tests and restores are a few hundred bytes, and a
// small request must still be served while large uploads hold the budget.
const smallBody = 64 << 10

// HTTPLimits are the timeouts of the HTTP server and of the request bodies
// it reads. Zero values mean the defaults.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds the request line and headers (10s).
	ReadHeaderTimeout time.Duration
	// BodyReadTimeout and BodyMinRate bound the reading of a body: it must
	// arrive within BodyReadTimeout plus its size at BodyMinRate bytes a
	// second (10s + size / 128 KiB/s: 106 s for a 12 MiB plan), else the
	// request is 408 request_timeout and its connection is closed.
	BodyReadTimeout time.Duration
	BodyMinRate     int64
	// WriteTimeout bounds the work of a request and the writing of its
	// answer, counted from the end of its headers or, for a request with a
	// body, from the end of its body (5m). It must exceed the longest
	// legitimate request: an apply's transaction (up to half the apply
	// lease), then up to three federation attempts for each OIDC material.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no request for
	// that long (120s: longer than the 60 s of common load balancers, so
	// that they close first).
	IdleTimeout time.Duration
}

// Defaults of HTTPLimits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyReadTimeout   = 10 * time.Second
	DefaultBodyMinRate       = 128 << 10
	DefaultWriteTimeout      = 5 * time.Minute
	DefaultIdleTimeout       = 120 * time.Second
)

// WithDefaults fills the zero values.
func (l HTTPLimits) WithDefaults() HTTPLimits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.BodyReadTimeout, DefaultBodyReadTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.BodyMinRate <= 0 {
		l.BodyMinRate = DefaultBodyMinRate
	}
	return l
}

// Configure sets the server's timeouts. The body's own deadline is set per
// request by the handlers of New, which must be given the same limits.
// ReadTimeout stays unset: one value cannot fit a 100-byte apply and a
// 12 MiB plan.
//
// It also bounds the request headers (MaxRequestHeaderBytes; net/http reads
// 4 KiB more, its buffer's slop, and checkFraming refuses what is over) and
// lets the handlers see the connections of EdgeListener, which the server
// must serve on.
func (l HTTPLimits) Configure(srv *http.Server) {
	l = l.WithDefaults()
	srv.MaxHeaderBytes = MaxRequestHeaderBytes
	srv.ConnContext = connContext
	srv.ReadHeaderTimeout = l.ReadHeaderTimeout
	srv.WriteTimeout = l.WriteTimeout
	srv.IdleTimeout = l.IdleTimeout
}

// bodyDeadline is how long a body of size bytes may take to arrive.
func (l HTTPLimits) bodyDeadline(size int64) time.Duration {
	return l.BodyReadTimeout + time.Duration(size*int64(time.Second)/l.BodyMinRate)
}

// BodyBudget bounds the bytes of the large request bodies the process reads
// and holds at once, so that stalled or slow uploads cannot take the memory
// of the process: a body over 64 KiB takes its declared size (its limit
// when it is sent chunked) from the budget before it is read, and gives it
// back when its request ends. A body larger than the whole budget waits
// for all of it.
type BodyBudget struct {
	capacity int64
	wait     time.Duration

	mu      sync.Mutex
	used    int64
	changed chan struct{} // closed, and replaced, whenever bytes are given back
}

// Defaults of NewBodyBudget.
const (
	DefaultBodyBudget     = 64 << 20
	DefaultBodyBudgetWait = time.Second
)

// NewBodyBudget returns a budget of capacity bytes; a request waits at most
// wait for its share, then is refused. Zero values mean the defaults.
func NewBodyBudget(capacity int64, wait time.Duration) *BodyBudget {
	if capacity <= 0 {
		capacity = DefaultBodyBudget
	}
	if wait <= 0 {
		wait = DefaultBodyBudgetWait
	}
	return &BodyBudget{capacity: capacity, wait: wait, changed: make(chan struct{})}
}

// InUse returns the bytes taken by the bodies being read or held.
func (b *BodyBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// take takes n bytes, waiting for them up to the budget's wait; it returns
// the function that gives them back, or false when they could not be had.
func (b *BodyBudget) take(ctx context.Context, n int64) (func(), bool) {
	n = min(n, b.capacity)
	timer := time.NewTimer(b.wait)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if b.used+n <= b.capacity {
			b.used += n
			b.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { b.give(n) }) }, true
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

func (b *BodyBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// Gin context keys of a request's body.
const (
	bodyReadKey    = "body_read"    // the body was read to its end
	bodyReleaseKey = "body_release" // gives the body's budget back
)

// holdBody gives the body budget a request took back when the request ends
// (its body is held until then), panics included.
func (s *Server) holdBody(c *gin.Context) {
	defer func() {
		if release, ok := c.Get(bodyReleaseKey); ok {
			release.(func())()
		}
	}()
	c.Next()
}

// bodyUnread reports whether the request has a body that was not read to
// its end: its answer then closes the connection, so that the server does
// not read the rest of it (net/http would, to reuse the connection) and
// the bytes left on the wire are not taken for the next request.
func bodyUnread(c *gin.Context) bool {
	return c.Request.ContentLength != 0 && !c.GetBool(bodyReadKey)
}

// readBody reads the request body up to limit bytes, after authentication
// (the routes' middleware) and before anything else: a body over limit by
// its Content-Length is refused unread; a large body first takes its size
// from the body budget (503 when it cannot within the budget's wait); then
// it must arrive within its deadline (408), after which the write timeout
// starts again for the work of the request.
func (s *Server) readBody(c *gin.Context, limit int64) ([]byte, error) {
	tooLarge := &config.Error{Code: config.CodeRequestTooLarge, Detail: "the request body is over " + strconv.FormatInt(limit>>20, 10) + " MiB"}
	size := c.Request.ContentLength
	if size > limit {
		return nil, tooLarge
	}
	if size == 0 {
		// No body: there is nothing to wait for, and the connection's
		// read deadline must stay unset (net/http already watches it for
		// the client going away).
		c.Set(bodyReadKey, true)
		return []byte{}, nil
	}
	if size < 0 {
		size = limit // chunked: up to the limit
	}
	if size > smallBody {
		release, ok := s.bodies.take(c.Request.Context(), size)
		if !ok {
			return nil, &config.Error{Code: config.CodeServiceUnavailable, Detail: "too many large request bodies are being read; the request did not run",
				Extra: map[string]any{"retry_after": 1}}
		}
		c.Set(bodyReleaseKey, release)
	}
	rc := http.NewResponseController(c.Writer)
	// A writer without deadlines (a test's recorder) has no connection
	// to bound.
	_ = rc.SetReadDeadline(time.Now().Add(s.limits.bodyDeadline(size)))
	body, err := readAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit), c.Request.ContentLength)
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
		c.Set(bodyReadKey, true)
	}
	// The answer, a 408 included, gets the whole write timeout.
	_ = rc.SetWriteDeadline(time.Now().Add(s.limits.WriteTimeout))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &config.Error{Code: config.CodeRequestTimeout, Detail: "the request body did not arrive in time: send it at " +
			strconv.FormatInt(s.limits.BodyMinRate, 10) + " bytes a second or faster"}
	case err != nil:
		return nil, &config.Error{Code: config.CodeMalformedRequest, Detail: "the request body could not be read"}
	}
	if err := config.CheckText(body); err != nil {
		return nil, err
	}
	return body, nil
}

// readAll reads r to its end into one buffer of the declared size (when
// known), rather than the doubling buffers of io.ReadAll, so that a body
// takes the memory the budget counted for it.
func readAll(r io.Reader, declared int64) ([]byte, error) {
	capacity := int64(512)
	if declared > 0 {
		capacity = declared + 1 // +1: the end is seen without growing
	}
	b := make([]byte, 0, capacity)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
