package service_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/service"
	"github.com/keenauth/configplans/test/testdb"
)

// answerWait is how long a test waits for an answer it expects: far longer
// than the deadlines the tests configure, far shorter than the body
// deadlines an answer must not wait for.
const answerWait = 30 * time.Second

// smallPlan is a plan creation body of a few bytes.
const smallPlan = `{"config": {"environment_settings": {"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 72}}}`

// bodyServer is the API over a real TCP listener, with the HTTP server
// configured as keenauthd configures it, on a SQLite database of its own.
type bodyServer struct {
	addr   string
	secret string
	bodies *service.BodyBudget
}

func startBodyServer(t *testing.T, limits service.HTTPLimits, bodies *service.BodyBudget) *bodyServer {
	t.Helper()
	ctx := context.Background()
	db := testdb.NewSQLite(t)
	log := slog.New(slog.DiscardHandler)
	dom := plans.New(configdb.New(db.DB, nil, configdb.Options{}), federation.Unconfigured{}, plans.DefaultConfig(), log, plans.Hooks{})
	env, err := dom.Environments.CreateEnvironment(ctx, "Shop")
	if err != nil {
		t.Fatal(err)
	}
	key, err := dom.Keys.CreateKey(ctx, env.ID, config.AllPermissions())
	if err != nil {
		t.Fatal(err)
	}
	if bodies == nil {
		bodies = service.NewBodyBudget(0, 0)
	}
	h := service.New(service.Deps{Domain: dom, IdempotencySecret: []byte("test-secret"), InternalToken: "internal-token",
		Log: log, HTTP: limits, Bodies: bodies})
	ts := httptest.NewUnstartedServer(h)
	limits.Configure(ts.Config)
	ts.Start()
	t.Cleanup(ts.Close)
	return &bodyServer{addr: ts.Listener.Addr().String(), secret: key.Secret, bodies: bodies}
}

// conn is one client connection, written to by hand.
type conn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

// open sends the head of a request: its Content-Length is declared, none of
// its body is sent. authorization "" sends no Authorization header.
func (s *bodyServer) open(t *testing.T, method, path, authorization string, contentLength int64) *conn {
	t.Helper()
	nc, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: keenauthd\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, path, contentLength)
	if authorization != "" {
		head += "Authorization: " + authorization + "\r\n"
	}
	if _, err := io.WriteString(nc, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	return &conn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// answer reads the answer to the request, waiting up to answerWait.
func (c *conn) answer() (*http.Response, map[string]any) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(answerWait))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read the answer: %v", err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp, m
}

// closedByServer fails the test unless the server closes the connection.
func (c *conn) closedByServer() {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(answerWait))
	if n, err := c.br.Read(make([]byte, 1)); err == nil {
		c.t.Fatalf("the connection stays open (read %d bytes)", n)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatal("the connection stays open")
	}
}

// do sends a whole request with a valid key on a new connection.
func (s *bodyServer) do(t *testing.T, method, path, body string) (*http.Response, map[string]any) {
	t.Helper()
	c := s.open(t, method, path, "Bearer "+s.secret, int64(len(body)))
	if _, err := io.WriteString(c.nc, body); err != nil {
		t.Fatal(err)
	}
	return c.answer()
}

// wantProblem fails the test unless resp is the problem status/code, on a
// connection the server closes.
func wantProblem(t *testing.T, resp *http.Response, m map[string]any, status int, code string) {
	t.Helper()
	if resp.StatusCode != status || m["code"] != code {
		t.Fatalf("answer %d %v, want %d %s", resp.StatusCode, m, status, code)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if !resp.Close {
		t.Fatalf("the answer keeps the connection open (Connection: %q)", resp.Header.Get("Connection"))
	}
}

// waitFor polls cond until it holds, failing the test after answerWait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(answerWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBodySlowerThanTheFloorIs408AndTheServerKeepsServing(t *testing.T) {
	t.Parallel()
	s := startBodyServer(t, service.HTTPLimits{BodyReadTimeout: 300 * time.Millisecond, BodyMinRate: 64 << 10}, nil)
	// 64 KiB at a byte every 50 ms would take an hour; its deadline is 1.3 s.
	const size = 64 << 10
	c := s.open(t, "POST", "/v1/config-plans", "Bearer "+s.secret, size)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		if _, err := io.WriteString(c.nc, `{"config": {}`); err != nil {
			return
		}
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := io.WriteString(c.nc, " "); err != nil {
				return
			}
		}
	}()
	resp, m := c.answer()
	wantProblem(t, resp, m, http.StatusRequestTimeout, "request_timeout")
	if resp.Header.Get("Request-Id") == "" {
		t.Fatal("no Request-Id")
	}
	c.closedByServer()

	resp, m = s.do(t, "POST", "/v1/config-plans", smallPlan)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a plan after the cut-off: %d %v", resp.StatusCode, m)
	}
	if resp.Close {
		t.Fatal("an answer after its whole body was read closes the connection")
	}
}

func TestUnreadableBodiesAreAnsweredWithoutBeingRead(t *testing.T) {
	t.Parallel()
	// Bodies that are never sent: an answer that waited for them would
	// come after an hour.
	s := startBodyServer(t, service.HTTPLimits{BodyReadTimeout: time.Hour}, nil)
	for _, tc := range []struct {
		name, method, path, auth string
		size                     int64
		status                   int
		code                     string
	}{
		{"no key, 12 MiB", "POST", "/v1/config-plans", "", 12 << 20, http.StatusUnauthorized, "unauthenticated"},
		{"no key, 1000 bytes", "POST", "/v1/config-plans", "", 1000, http.StatusUnauthorized, "unauthenticated"},
		{"unknown key, 12 MiB", "POST", "/v1/config-plans", "Bearer ksk_unknown", 12 << 20, http.StatusUnauthorized, "unauthenticated"},
		{"no key, apply", "POST", "/v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply", "", 100, http.StatusUnauthorized, "unauthenticated"},
		{"internal, no token", "PUT", "/internal/v1/environments/env_01m4qpqtywfs7930tb6kqn5rc5/policies", "", 4 << 20, http.StatusUnauthorized, "unauthenticated"},
		{"over the limit by its Content-Length", "POST", "/v1/config-plans", "Bearer " + s.secret, 12<<20 + 1, http.StatusRequestEntityTooLarge, "request_too_large"},
		{"apply over 4 MiB", "POST", "/v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply", "Bearer " + s.secret, 4<<20 + 1, http.StatusRequestEntityTooLarge, "request_too_large"},
		{"unknown verb", "POST", "/v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5:launch", "Bearer " + s.secret, 1000, http.StatusNotFound, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, m := s.open(t, tc.method, tc.path, tc.auth, tc.size).answer()
			wantProblem(t, resp, m, tc.status, tc.code)
		})
	}
	if n := s.bodies.InUse(); n != 0 {
		t.Fatalf("unread bodies hold %d bytes of the budget", n)
	}
}

func TestBodyBudgetRefusesStalledUploadsBeyondItUntilTheyAreCutOff(t *testing.T) {
	t.Parallel()
	const size = 200 << 10
	// Room for two stalled bodies of 200 KiB; they are cut off 4 s after
	// their head, while a third waits 100 ms for the budget.
	bodies := service.NewBodyBudget(450<<10, 100*time.Millisecond)
	s := startBodyServer(t, service.HTTPLimits{BodyReadTimeout: 4 * time.Second, BodyMinRate: 1 << 30}, bodies)

	var stalled []*conn
	for i := range 2 {
		stalled = append(stalled, s.open(t, "POST", "/v1/config-plans", "Bearer "+s.secret, size))
		waitFor(t, fmt.Sprintf("stalled upload %d to take its budget", i+1), func() bool { return bodies.InUse() == int64(i+1)*size })
	}

	resp, m := s.open(t, "POST", "/v1/config-plans", "Bearer "+s.secret, size).answer()
	wantProblem(t, resp, m, http.StatusServiceUnavailable, "service_unavailable")
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Fatalf("Retry-After = %q", ra)
	}
	resp, m = s.do(t, "POST", "/v1/config-plans", smallPlan)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a small plan while the budget is taken: %d %v", resp.StatusCode, m)
	}
	if n := bodies.InUse(); n != 2*size {
		t.Fatalf("budget in use = %d while the stalled uploads wait, want %d", n, 2*size)
	}

	for _, c := range stalled {
		resp, m := c.answer()
		wantProblem(t, resp, m, http.StatusRequestTimeout, "request_timeout")
	}
	waitFor(t, "the cut-off uploads to give their budget back", func() bool { return bodies.InUse() == 0 })
	large := smallPlan[:len(smallPlan)-1] + strings.Repeat(" ", size-len(smallPlan)) + "}"
	resp, m = s.do(t, "POST", "/v1/config-plans", large)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a 200 KiB plan once the budget is free: %d %v", resp.StatusCode, m)
	}
	if n := bodies.InUse(); n != 0 {
		t.Fatalf("budget in use = %d after the plan, want 0", n)
	}
}
