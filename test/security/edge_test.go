// Package security_test holds the hostile-input and held-connection cases
// of the security reviews (SPEC §23), against the real keenauthd binary over
// raw TCP connections: what net/http and the router do with a request
// depends on the bytes on the wire, which an HTTP client would correct.
package security_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// closeBound is the bound of §23 on closing a connection after an early
// answer or a refused request.
const closeBound = time.Second

// TestEdge runs the edge cases against one server.
func TestEdge(t *testing.T) {
	s := start(t)

	t.Run("headers of 60 KiB are served", func(t *testing.T) {
		x := s.open()
		x.send("GET /healthz HTTP/1.1\r\nHost: keenauth\r\n" + headerLines(60<<10) + "\r\n")
		if resp, _ := x.answer(); resp.StatusCode != http.StatusOK {
			t.Fatalf("60 KiB of headers: %d", resp.StatusCode)
		}
	})

	// Over 64 KiB: under net/http's own limit (64 KiB and its 4 KiB of
	// slop) the router refuses; past it, net/http does and its plain
	// answer is rewritten; an unfinished line of 1 MB is cut at the limit.
	for name, headers := range map[string]string{
		"66 KiB":                     headerLines(66<<10) + "\r\n",
		"100 KiB":                    headerLines(100<<10) + "\r\n",
		"an unfinished line of 1 MB": "X-Long: " + strings.Repeat("b", 1<<20),
	} {
		t.Run("headers of "+name+" are 431 and closed", func(t *testing.T) {
			x := s.open()
			go x.send("GET /v1/config HTTP/1.1\r\nHost: keenauth\r\n" + headers)
			resp, body := x.answer()
			problem(t, resp, body, http.StatusRequestHeaderFieldsTooLarge, "request_headers_too_large")
			if !resp.Close {
				t.Errorf("the answer does not say Connection: close")
			}
			x.closedWithin(closeBound)
		})
	}

	// A proxy that reads Content-Length would take the second request for
	// a part of the first one's body: the first is refused, the
	// connection closed, the second never runs.
	smuggled := "0\r\n\r\nGET /v1/config HTTP/1.1\r\nHost: keenauth\r\nAuthorization: Bearer " + s.secret + "\r\n\r\n"
	for name, prefix := range map[string]string{
		"a first request":                         "",
		"a second request of a kept-alive stream": "GET /healthz HTTP/1.1\r\nHost: keenauth\r\n\r\n",
	} {
		t.Run("Transfer-Encoding and Content-Length in "+name+" are 400 and closed", func(t *testing.T) {
			x := s.open()
			x.send(prefix + "POST /v1/config-plans HTTP/1.1\r\nHost: keenauth\r\nAuthorization: Bearer " + s.secret +
				"\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(smuggled)) +
				"\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled)
			if prefix != "" {
				if resp, _ := x.answer(); resp.StatusCode != http.StatusOK {
					t.Fatalf("the first request: %d", resp.StatusCode)
				}
			}
			resp, body := x.answer()
			problem(t, resp, body, http.StatusBadRequest, "malformed_request")
			x.closedWithin(closeBound)
		})
	}

	t.Run("a chunked body and kept-alive requests are followed", func(t *testing.T) {
		x := s.open()
		doc := `{"config": {"environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 72}}}`
		// Two chunks, one with an extension, and a trailer.
		half := len(doc) / 2
		whole := fmt.Sprintf("%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Trailer: 1\r\n\r\n", half, doc[:half], len(doc)-half, doc[half:])
		for range 3 {
			x.send("POST /v1/config-plans HTTP/1.1\r\nHost: keenauth\r\nAuthorization: Bearer " + s.secret +
				"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + whole)
			if resp, b := x.answer(); resp.StatusCode != http.StatusCreated {
				t.Fatalf("a chunked plan: %d %v", resp.StatusCode, b)
			}
			x.send("POST /v1/config-plans HTTP/1.1\r\nHost: keenauth\r\nAuthorization: Bearer " + s.secret +
				"\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(doc)) + "\r\n\r\n" + doc)
			if resp, b := x.answer(); resp.StatusCode != http.StatusCreated {
				t.Fatalf("a plan after a chunked one: %d %v", resp.StatusCode, b)
			}
		}
	})

	t.Run("two Authorization headers are 400", func(t *testing.T) {
		x := s.open()
		x.send("GET /v1/config HTTP/1.1\r\nHost: keenauth\r\nAuthorization: Bearer " + s.secret +
			"\r\nAuthorization: Bearer ksk_other\r\n\r\n")
		resp, body := x.answer()
		problem(t, resp, body, http.StatusBadRequest, "malformed_request")
	})

	// A keyless client declares a body and sends one byte of it: the
	// answer does not wait for the rest.
	held := map[string]struct {
		request string
		status  int
		code    string
	}{
		"401": {"POST /v1/config-plans HTTP/1.1\r\nHost: keenauth\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{",
			http.StatusUnauthorized, "unauthenticated"},
		"401 of a chunked body": {"POST /v1/config-plans HTTP/1.1\r\nHost: keenauth\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{",
			http.StatusUnauthorized, "unauthenticated"},
		"404": {"POST /v1/nowhere HTTP/1.1\r\nHost: keenauth\r\nAuthorization: Bearer " + s.secret + "\r\nContent-Length: 200000\r\n\r\n{",
			http.StatusNotFound, "not_found"},
		"413": {"POST /v1/config-plans HTTP/1.1\r\nHost: keenauth\r\nAuthorization: Bearer " + s.secret + "\r\nContent-Length: 99000000\r\n\r\n{",
			http.StatusRequestEntityTooLarge, "request_too_large"},
		"401 of an internal endpoint": {"POST /internal/v1/token-activity HTTP/1.1\r\nHost: keenauth\r\nContent-Length: 100000\r\n\r\n{",
			http.StatusUnauthorized, "unauthenticated"},
	}
	for name, tc := range held {
		t.Run("a held body of a "+name+" is not waited for", func(t *testing.T) {
			x := s.open()
			x.send(tc.request)
			resp, body := x.answer()
			problem(t, resp, body, tc.status, tc.code)
			x.closedWithin(closeBound)
		})
	}

	t.Run("a held body of a GET is not waited for", func(t *testing.T) {
		x := s.open()
		x.send("GET /healthz HTTP/1.1\r\nHost: keenauth\r\nContent-Length: 200000\r\n\r\n{")
		if resp, _ := x.answer(); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /healthz: %d", resp.StatusCode)
		}
		x.closedWithin(closeBound)
	})

	// The review's case: 100 such sockets, all open after 180 s before.
	t.Run("100 held keyless bodies are all closed", func(t *testing.T) {
		var xs []*exchange
		for range 100 {
			x := s.open()
			x.send(held["401"].request)
			xs = append(xs, x)
		}
		for _, x := range xs {
			resp, body := x.answer()
			problem(t, resp, body, http.StatusUnauthorized, "unauthenticated")
			x.closedWithin(closeBound)
		}
	})

	t.Run("every line written is JSON", func(t *testing.T) {
		for name, out := range map[string]string{"stdout": s.node.Stdout(), "stderr": s.node.Logs()} {
			lines := strings.Split(out, "\n")
			for _, line := range lines[:len(lines)-1] { // the last is empty or not whole yet
				if !json.Valid([]byte(line)) {
					t.Errorf("a line of %s is not JSON: %q", name, line)
				}
			}
			if len(lines) < 2 {
				t.Errorf("%s holds no line", name)
			}
		}
	})
}

// TestNetHTTPReportsAreJSONLines: net/http reports what goes wrong below
// the handlers on its own log (here, accepting connections once the
// process is out of file descriptors); those lines are JSON lines of the
// service's log too.
func TestNetHTTPReportsAreJSONLines(t *testing.T) {
	s := startWith(t, func(binary string) string {
		// keenauthd with few file descriptors.
		script := filepath.Join(t.TempDir(), "keenauthd")
		if err := os.WriteFile(script, []byte("#!/bin/sh\nulimit -n 64\nexec "+binary+" \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return script
	})
	for range 100 {
		if c, err := net.DialTimeout("tcp", s.addr, 2*time.Second); err == nil {
			t.Cleanup(func() { _ = c.Close() })
		}
	}
	s.node.WaitFor(t, "net/http's report of the failed accepts", func() bool {
		return strings.Contains(s.node.Logs(), "Accept error")
	})
	lines := strings.Split(s.node.Logs(), "\n")
	for _, line := range lines[:len(lines)-1] {
		if !json.Valid([]byte(line)) {
			t.Errorf("a line logged is not JSON: %q", line)
		}
	}
}
