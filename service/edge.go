package service

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keenauth/configplans/config"
)

// The HTTP edge (§23). net/http leaves three things to its user that a
// hostile or broken client can exploit:
//
//   - the request framing it accepted: a request with both Transfer-Encoding
//     and Content-Length is read as chunked, and Content-Length is removed
//     from the request, so a handler cannot tell that a proxy in front may
//     have framed it otherwise (request smuggling);
//   - its own answer when the headers are over MaxHeaderBytes: a plain-text
//     431;
//   - the body left unread by an early answer (401, 403, 404, 413): it reads
//     up to 256 KiB of it, without a deadline, before closing, so a client
//     that declares a body and never sends it holds the connection.
//
// EdgeListener wraps each connection in an edgeConn that follows the
// framing of the requests as they are read (each request's header size and
// whether it had both framing headers), rewrites net/http's plain-text 431
// as a problem, and closes a connection whose body was answered before it
// was read without waiting for it. The checkFraming middleware refuses the
// requests that the connection saw to be malformed.

// MaxRequestHeaderBytes bounds a request's line and headers in all (§23).
const MaxRequestHeaderBytes = 64 << 10

// closeLinger is how long a connection closed after an early answer waits
// for the client to read it (its end was sent first) before it is closed
// for good: a close with unread bytes resets the connection, which can
// destroy the answer on its way. It is counted from the answer, and keeps
// the connection well within the second §23 allows.
const closeLinger = 500 * time.Millisecond

// lingerDiscard bounds what is read of a body while lingering.
const lingerDiscard = 256 << 10

// EdgeListener wraps ln so that the server configured by
// HTTPLimits.Configure can see each connection's framing.
func EdgeListener(ln net.Listener) net.Listener { return edgeListener{ln} }

type edgeListener struct{ net.Listener }

func (l edgeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &edgeConn{Conn: c}, nil
}

// edgeConnKey holds a request's *edgeConn in its context (ConnContext).
type edgeConnKey struct{}

func connContext(ctx context.Context, c net.Conn) context.Context {
	if ec, ok := c.(*edgeConn); ok {
		return context.WithValue(ctx, edgeConnKey{}, ec)
	}
	return ctx
}

func edgeConnOf(ctx context.Context) *edgeConn {
	ec, _ := ctx.Value(edgeConnKey{}).(*edgeConn)
	return ec
}

// edgeConn is a server connection that follows its requests' framing.
type edgeConn struct {
	net.Conn

	mu     sync.Mutex
	frames framing

	linger atomic.Bool // an early answer was given: close gently, but soon
}

func (c *edgeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.frames.feed(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

// next returns the framing of the next request the server handles; ok is
// false when the connection's bytes could not be followed (the request is
// then refused: net/http read something this reader could not).
func (c *edgeConn) next() (frame, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.frames.done) == 0 {
		return frame{}, false
	}
	f := c.frames.done[0]
	c.frames.done = c.frames.done[1:]
	return f, true
}

// plainHeaderTooLarge is the whole answer net/http writes itself when a
// request's headers are over MaxHeaderBytes.
const plainHeaderTooLarge = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large"

func (c *edgeConn) Write(p []byte) (int, error) {
	if string(p) == plainHeaderTooLarge {
		if _, err := c.Conn.Write(headersTooLargeAnswer(config.NewID(config.PrefixRequest))); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite lets net/http half-close the connection after its own 431.
func (c *edgeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection. After an early answer, the client gets the
// end of the stream first, then up to closeLinger to read the answer while
// the rest of its body is discarded.
func (c *edgeConn) Close() error {
	if c.linger.Load() {
		_ = c.CloseWrite()
		_ = c.Conn.SetReadDeadline(time.Now().Add(closeLinger))
		_, _ = io.CopyN(io.Discard, c.Conn, lingerDiscard)
	}
	return c.Conn.Close()
}

// headersTooLargeAnswer is the 431 problem of a request whose headers
// net/http refused before any handler ran.
func headersTooLargeAnswer(requestID string) []byte {
	r := problemResponse(errHeadersTooLarge(), requestID)
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 431 Request Header Fields Too Large\r\n")
	r.header.Set("Content-Length", strconv.Itoa(len(r.body)))
	r.header.Set("Connection", "close")
	r.header.Set("Request-Id", requestID)
	r.header.Set("Cache-Control", "no-store")
	_ = r.header.Write(&b)
	b.WriteString("\r\n")
	b.Write(r.body)
	return b.Bytes()
}

func errHeadersTooLarge() error {
	return &config.Error{Code: config.CodeRequestHeadersTooLarge,
		Detail: "the request line and headers are over " + strconv.Itoa(MaxRequestHeaderBytes>>10) + " KiB"}
}

// checkFraming refuses, and closes the connection of, a request whose
// headers are over MaxRequestHeaderBytes (431), that has both
// Transfer-Encoding and Content-Length, or two Authorization headers (400).
// A request of a connection the edge does not follow (a test's recorder)
// is only checked for its Authorization headers.
func (s *Server) checkFraming(c *gin.Context) {
	refuse := func(err error) {
		c.Header("Connection", "close")
		if !bodyUnread(c) { // else write closes it early
			s.closeEarly(c)
		}
		s.fail(c, err)
	}
	if ec := edgeConnOf(c.Request.Context()); ec != nil {
		f, ok := ec.next()
		switch {
		case !ok:
			refuse(&config.Error{Code: config.CodeMalformedRequest, Detail: "the request's framing could not be read"})
			return
		case f.headerBytes > MaxRequestHeaderBytes:
			refuse(errHeadersTooLarge())
			return
		case f.chunked && f.hasLength:
			refuse(&config.Error{Code: config.CodeMalformedRequest, Detail: "a request must not have both Transfer-Encoding and Content-Length"})
			return
		}
	}
	if len(c.Request.Header.Values("Authorization")) > 1 {
		refuse(&config.Error{Code: config.CodeMalformedRequest, Detail: "a request must have at most one Authorization header"})
		return
	}
	if c.Request.ContentLength != 0 && (c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead) {
		// No GET reads a body, and its answer does not go through write:
		// net/http would read up to 256 KiB of the body, without a
		// deadline, before sending the answer's headers.
		c.Header("Connection", "close")
		s.closeEarly(c)
	}
	c.Next()
}

// closeEarly makes an answer given before the request's body was read
// close its connection at once: net/http would otherwise wait, without a
// deadline, for up to 256 KiB of a body that may never come. The read
// deadline ends that wait; the connection then lingers briefly so that
// the client reads the answer (edgeConn.Close).
func (s *Server) closeEarly(c *gin.Context) {
	if ec := edgeConnOf(c.Request.Context()); ec != nil {
		ec.linger.Store(true)
	}
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now())
}
