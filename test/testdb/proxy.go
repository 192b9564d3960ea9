package testdb

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to the test Redis, so that a test can make
// Redis slow (every chunk of its answers held for a delay; requests pass at
// once, so the commands do run) or unreachable (every connection closed,
// new ones dropped) while the real Redis stays up for everyone else.
type Proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	down  bool
	delay time.Duration
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartProxy starts a proxy to the test Redis that delays Redis's answers by
// delay; it stops when t ends.
func StartProxy(t testing.TB, delay time.Duration) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, delay: delay, conns: map[net.Conn]struct{}{}}
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
		up, err := net.Dial("tcp", RedisAddr())
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		delay := p.delay
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(up, c, 0)
		go p.pipe(c, up, delay)
	}
}

// pipe copies src to dst, holding each chunk for delay.
func (p *Proxy) pipe(dst, src net.Conn, delay time.Duration) {
	defer p.wg.Done()
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

// SetDown takes the proxy down (every connection closed, new ones dropped)
// or brings it back.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
}
