package security_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/test/procs"
	"github.com/keenauth/configplans/test/testdb"
)

// binary is keenauthd, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(procs.Main(m, &binary))
}

// server is one keenauthd serve over a database and a redis-server of the
// test's own, with an environment and an all-permissions key.
type server struct {
	t      *testing.T
	node   *procs.Node
	addr   string
	secret string
}

func start(t *testing.T) *server {
	t.Helper()
	return startWith(t, func(binary string) string { return binary })
}

// startWith starts the server with the program wrap returns for the
// binary's path (serve only: the one-shot commands run the binary).
func startWith(t *testing.T, wrap func(binary string) string) *server {
	t.Helper()
	rs := procs.StartRedis(t)
	db := testdb.New(t)
	env := []string{
		"KEENAUTHD_DATABASE_URL=" + db.URL,
		"KEENAUTHD_REDIS_URL=" + rs.URL(),
		"KEENAUTHD_LISTEN=127.0.0.1:0",
		"KEENAUTHD_IDEMPOTENCY_SECRET=security-idempotency-secret",
		"KEENAUTHD_LOG_LEVEL=info",
	}
	procs.Command(t, binary, env, "migrate")
	var e struct{ ID string }
	if err := json.Unmarshal(procs.Command(t, binary, env, "env", "create", "--name", "Shop"), &e); err != nil {
		t.Fatal(err)
	}
	var k struct{ Secret string }
	if err := json.Unmarshal(procs.Command(t, binary, env, "key", "create", "--env", e.ID, "--permissions", "all"), &k); err != nil {
		t.Fatal(err)
	}
	n := procs.Serve(t, wrap(binary), env)
	return &server{t: t, node: n, addr: strings.TrimPrefix(n.URL, "http://"), secret: k.Secret}
}

// dial opens a raw connection to the server; it is closed when the test
// ends.
func (s *server) dial() net.Conn {
	s.t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// exchange is a raw connection and the reader of its answers.
type exchange struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func (s *server) open() *exchange {
	c := s.dial()
	return &exchange{t: s.t, conn: c, r: bufio.NewReader(c)}
}

// send writes raw bytes; a write the server refused by closing is not an
// error of the test (it may stop reading once it answered).
func (x *exchange) send(b string) {
	_ = x.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(x.conn, b)
}

// answer reads the next answer, within 10 s.
func (x *exchange) answer() (*http.Response, map[string]any) {
	x.t.Helper()
	_ = x.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(x.r, nil)
	if err != nil {
		x.t.Fatalf("reading the answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		x.t.Fatalf("reading the answer's body: %v", err)
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return resp, m
}

// closedWithin fails the test unless the server closes the connection
// within d: reading reaches the end of the stream (or a reset) before the
// read deadline.
func (x *exchange) closedWithin(d time.Duration) {
	x.t.Helper()
	_ = x.conn.SetReadDeadline(time.Now().Add(d))
	n, err := io.Copy(io.Discard, x.r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		x.t.Fatalf("the connection is still open after %s", d)
	}
	if n > 0 {
		x.t.Errorf("%d bytes more after the answer", n)
	}
}

// problem checks a problem answer's status and code.
func problem(t *testing.T, resp *http.Response, body map[string]any, status int, code string) {
	t.Helper()
	if resp.StatusCode != status || body["code"] != code || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("answer %d %s %v, want %d problem %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, status, code)
	}
	if s, _ := body["request_id"].(string); !strings.HasPrefix(s, "req_") || resp.Header.Get("Request-Id") != s {
		t.Errorf("request_id %v, Request-Id %q", body["request_id"], resp.Header.Get("Request-Id"))
	}
}

// headerLines returns header lines of about n bytes in all.
func headerLines(n int) string {
	var b bytes.Buffer
	line := "X-Filler: " + strings.Repeat("a", 990) + "\r\n"
	for b.Len()+len(line) <= n {
		b.WriteString(line)
	}
	return b.String()
}
