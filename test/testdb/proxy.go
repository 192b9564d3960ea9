package testdb

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a test server (Redis, PostgreSQL), so
// that a test can make it slow (every chunk of its answers held for a
// delay; requests pass at once, so the commands do run), unreachable (every
// connection closed, new ones dropped), or lose connections at precise
// moments, while the real server stays up for everyone else.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	delay  time.Duration
	conns  map[net.Conn]struct{}
	// servers are the connections to the target, and lingering those of
	// them that CutLingering keeps open for a while after their client's
	// side is cut.
	servers   map[net.Conn]bool
	lingering map[net.Conn]time.Duration
	wg        sync.WaitGroup
	// cut, when set, is the client message that cuts its connection (once).
	cut       []byte
	cutBefore bool
	// mark, when set, is a client message that names the one connection
	// cut may be found on (CutOnConnOf); marked is that connection once
	// mark went through it.
	mark   []byte
	marked net.Conn
	cuts   int
	// cutAfter, when positive, counts down the client chunks until the one
	// whose connection is cut, before it is forwarded.
	cutAfter int
	chunks   int
}

// StartProxy starts a proxy to the test Redis that delays Redis's answers by
// delay; it stops when t ends.
func StartProxy(t testing.TB, delay time.Duration) *Proxy {
	t.Helper()
	return StartProxyTo(t, RedisAddr(), delay)
}

// StartProxyTo starts a proxy to target (host:port) that delays the
// target's answers by delay; it stops when t ends.
func StartProxyTo(t testing.TB, target string, delay time.Duration) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, delay: delay, conns: map[net.Conn]struct{}{},
		servers: map[net.Conn]bool{}, lingering: map[net.Conn]time.Duration{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.SetDown(true)
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up], p.servers[up] = struct{}{}, struct{}{}, true
		delay := p.delay
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(up, c, 0, c)
		go p.pipe(c, up, delay, nil)
	}
}

// pipe copies src to dst, holding each chunk for delay. client is src when
// it is the client's side, whose messages may cut the connection.
func (p *Proxy) pipe(dst, src net.Conn, delay time.Duration, client net.Conn) {
	defer p.wg.Done()
	keepDst := false
	defer func() {
		if !keepDst {
			p.close(dst)
		}
	}()
	defer p.close(src)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			time.Sleep(delay)
			cut, before := false, false
			if client != nil {
				cut, before = p.cutting(client, buf[:n])
			}
			if cut && before {
				return
			}
			if cut {
				// The client's side is closed before the message goes on:
				// closed after, a server that answers before this goroutine
				// runs again (a quick COMMIT on a busy machine) would have
				// its answer reach the client through the other pipe.
				_ = client.Close()
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if cut {
				// The message reached the server; its answer will not reach
				// the client. The server's side stays open until the answer
				// comes (the other pipe closes it then): closed now, the
				// server could see the reset before it read the message.
				keepDst = true
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cutting reports whether chunk, sent by client, holds the message armed
// by CutOn or CutOnConnOf, and disarms it.
func (p *Proxy) cutting(client net.Conn, chunk []byte) (cut, before bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.chunks++
	if p.cutAfter > 0 {
		if p.cutAfter--; p.cutAfter == 0 {
			p.cuts++
			return true, true
		}
	}
	if p.cut == nil {
		return false, false
	}
	if p.mark != nil {
		if p.marked == nil && bytes.Contains(chunk, p.mark) {
			p.marked = client
		}
		if client != p.marked {
			return false, false
		}
		if bytes.Contains(chunk, RollbackMessage) {
			// The marked transaction ends without a COMMIT, and its
			// connection goes back to the pool: the cut waits for the mark
			// again.
			p.marked = nil
			return false, false
		}
	}
	if !bytes.Contains(chunk, p.cut) {
		return false, false
	}
	p.cut, p.mark, p.marked = nil, nil, nil
	p.cuts++
	return true, p.cutBefore
}

// SetDown takes the proxy down (every connection closed, new ones dropped)
// or brings it back.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		p.closeAll()
	}
}

// Cut closes every open connection; new ones are accepted as before.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeAll()
}

func (p *Proxy) closeAll() {
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
	clear(p.servers)
}

// CutLingering closes the clients' side of every open connection now, and
// the target's side of each linger later: as a client that goes away while
// PostgreSQL's backend has not yet seen it, which keeps its transaction,
// and its locks, until it reads the connection's end. New connections are
// accepted as before.
func (p *Proxy) CutLingering(linger time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if p.servers[c] {
			p.lingering[c] = linger
		} else {
			_ = c.Close()
		}
	}
	clear(p.conns)
	clear(p.servers)
}

// close closes c, or, when CutLingering left it to linger, has it closed
// once its time is over.
func (p *Proxy) close(c net.Conn) {
	p.mu.Lock()
	linger, ok := p.lingering[c]
	delete(p.lingering, c)
	p.mu.Unlock()
	if !ok {
		_ = c.Close()
		return
	}
	time.AfterFunc(linger, func() { _ = c.Close() })
}

// CutOn arms a cut (and disarms CutOnChunk): the next chunk a client sends that holds msg closes
// that client's connection, either before msg is forwarded (the server
// never sees it) or just after (the server runs it; its answer is lost).
func (p *Proxy) CutOn(msg []byte, before bool) {
	p.CutOnConnOf(nil, msg, before)
}

// CutOnConnOf is CutOn on one connection only: the first that sends a
// chunk holding mark (a statement the test sends on the transaction it
// means, such as SELECT 'a marker'), until that connection rolls back.
// The other clients of the same database, a background job's COMMIT among
// them, go through untouched. A nil mark is any connection, as CutOn.
func (p *Proxy) CutOnConnOf(mark, msg []byte, before bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.cutBefore, p.cutAfter = msg, before, 0
	p.mark, p.marked = mark, nil
}

// CutOnChunk arms a cut of the connection that carries the n-th chunk
// clients send from now on (n ≥ 1), before it is forwarded; 0 disarms it.
func (p *Proxy) CutOnChunk(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutAfter = n
}

// Chunks is the number of chunks clients have sent.
func (p *Proxy) Chunks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chunks
}

// Cuts is the number of armed cuts that happened.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// CommitMessage and RollbackMessage are how pgx sends COMMIT and ROLLBACK:
// simple-protocol queries.
var (
	CommitMessage   = []byte("commit\x00")
	RollbackMessage = []byte("rollback\x00")
)

// Through returns d reached through a proxy to PostgreSQL that t owns: the
// same database, a handle of its own (closed when t ends).
func (d *Database) Through(t testing.TB, delay time.Duration) (*Database, *Proxy) {
	t.Helper()
	u, err := url.Parse(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := StartProxyTo(t, u.Host, delay)
	u.Host = p.Addr()
	pd := &Database{Name: d.Name, URL: u.String()}
	if pd.DB, err = Open(pd.URL); err != nil {
		t.Fatalf("testdb: open %s through a proxy: %v", d.Name, err)
	}
	t.Cleanup(func() {
		if s, err := pd.DB.DB(); err == nil {
			s.Close()
		}
	})
	return pd, p
}
