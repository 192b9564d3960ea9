package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keenauth/configplans/test/testdb"
)

// serveRedisDB is the Redis database of these tests: serve's keys have a
// fixed prefix, so they stay out of the database other tests share.
const serveRedisDB = "7"

// server is a `keenauthd serve` started by run in a goroutine.
type server struct {
	t      *testing.T
	db     *testdb.Database
	getenv func(string) string
	base   string
	stop   context.CancelFunc
	done   chan error
	logs   *lockedBuffer
	envID  string
	secret string
	client *http.Client
}

// lockedBuffer is a goroutine-safe writer.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe creates an environment and an all-permissions key with the
// commands, then starts serve on a free port over a test database.
func startServe(t *testing.T, extra map[string]string) *server {
	t.Helper()
	s := &server{t: t, db: testdb.New(t), done: make(chan error, 1), logs: &lockedBuffer{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	vars := map[string]string{
		"KEENAUTHD_DATABASE_URL":       s.db.URL,
		"KEENAUTHD_REDIS_URL":          "redis://" + testdb.RedisAddr() + "/" + serveRedisDB,
		"KEENAUTHD_LISTEN":             "127.0.0.1:0",
		"KEENAUTHD_IDEMPOTENCY_SECRET": "serve-test-secret",
		"KEENAUTHD_SHUTDOWN_TIMEOUT":   "60s",
		"KEENAUTHD_LOG_LEVEL":          "debug",
	}
	for k, v := range extra {
		vars[k] = v
	}
	s.getenv = func(k string) string { return vars[k] }

	var out bytes.Buffer
	if err := run(context.Background(), []string{"env", "create", "--name", "Shop"}, s.getenv, &out, io.Discard); err != nil {
		t.Fatalf("env create: %v", err)
	}
	var env struct{ ID string }
	if err := json.Unmarshal(out.Bytes(), &env); err != nil {
		t.Fatalf("env create printed %q: %v", out.String(), err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"key", "create", "--env", env.ID, "--permissions", "all"}, s.getenv, &out, io.Discard); err != nil {
		t.Fatalf("key create: %v", err)
	}
	var key struct{ Secret string }
	if err := json.Unmarshal(out.Bytes(), &key); err != nil {
		t.Fatalf("key create printed %q: %v", out.String(), err)
	}
	s.envID, s.secret = env.ID, key.Secret

	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	pr, pw := io.Pipe()
	go func() {
		err := run(ctx, []string{"serve"}, s.getenv, pw, s.logs)
		pw.Close()
		s.done <- err
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-s.done:
		case <-time.After(time.Minute):
			t.Errorf("serve did not stop")
		}
	})
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var l struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening on" {
			s.base = "http://" + l.Addr
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			return s
		}
	}
	t.Fatalf("serve stopped before listening: %v\n%s", <-s.done, s.logs.String())
	return nil
}

// do sends a request with the all-permissions key.
func (s *server) do(method, path, body string) (int, map[string]any) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// TestServeDrainFinishesRunningApplyWhileReadyzAnswers503 holds the
// environment's row lock from the test's own connection, so that an apply
// blocks for real inside its transaction; cancels serve's context; checks
// that /readyz answers 503 and new requests are refused while the apply
// runs; then releases the lock: the apply answers 200 and run returns nil.
func TestServeDrainFinishesRunningApplyWhileReadyzAnswers503(t *testing.T) {
	t.Parallel()
	s := startServe(t, nil)
	status, plan := s.do("POST", "/v1/config-plans",
		`{"config": {"environment_settings": {"display_name": "Shop 2", "default_locale": "en", "session_lifetime_hours": 72}}}`)
	if status != http.StatusCreated {
		t.Fatalf("create plan: %d %v", status, plan)
	}
	planID := plan["id"].(string)

	tx := s.db.DB.Begin()
	if err := tx.Exec("SELECT id FROM environments WHERE id = ? FOR NO KEY UPDATE", s.envID).Error; err != nil {
		t.Fatalf("lock the environment: %v", err)
	}
	released := false
	defer func() {
		if !released {
			tx.Rollback()
		}
	}()

	type answer struct {
		status int
		body   map[string]any
	}
	applied := make(chan answer, 1)
	go func() {
		st, body := s.do("POST", "/v1/config-plans/"+planID+":apply", "{}")
		applied <- answer{st, body}
	}()
	waitFor(t, "the apply to wait for the environment's lock", func() bool {
		var n int64
		err := s.db.DB.Raw("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n).Error
		return err == nil && n > 0
	})

	s.stop()
	waitFor(t, "/readyz to answer 503", func() bool {
		st, body := s.do("GET", "/readyz", "")
		return st == http.StatusServiceUnavailable && body["status"] == "draining"
	})
	if st, body := s.do("GET", "/healthz", ""); st != http.StatusOK {
		t.Errorf("/healthz while draining = %d %v, want 200", st, body)
	}
	if st, body := s.do("GET", "/v1/config", ""); st != http.StatusServiceUnavailable || body["code"] != "service_unavailable" {
		t.Errorf("a new request while draining = %d %v, want 503 service_unavailable", st, body)
	}
	select {
	case a := <-applied:
		t.Fatalf("the apply answered %d %v while the environment was still locked", a.status, a.body)
	case err := <-s.done:
		t.Fatalf("run returned %v while an apply was running", err)
	default:
	}

	tx.Rollback()
	released = true
	select {
	case a := <-applied:
		if a.status != http.StatusOK || a.body["status"] != "applied" {
			t.Fatalf("apply = %d %v, want 200 applied", a.status, a.body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the apply did not finish after the lock was released")
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("run = %v, want nil", err)
		}
		s.done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after the drain")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.base, "http://"), time.Second); err == nil {
		c.Close()
		t.Errorf("the listener still accepts connections after run returned")
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		if m["msg"] == "request" && m["route"] == "/v1/config-plans/:id" && m["method"] == "POST" {
			line = m
		}
	}
	if line == nil || line["status"] != 200.0 || line["plan_id"] != planID || line["environment_id"] != s.envID {
		t.Errorf("access log line of the apply = %v", line)
	}
}

// TestServeDrainPastShutdownTimeoutCutsOffAndFails keeps an apply blocked
// past KEENAUTHD_SHUTDOWN_TIMEOUT: run stops waiting, cuts the request off
// and returns an error (exit status 1), and the plan is not left applying.
func TestServeDrainPastShutdownTimeoutCutsOffAndFails(t *testing.T) {
	t.Parallel()
	s := startServe(t, map[string]string{"KEENAUTHD_SHUTDOWN_TIMEOUT": "1s"})
	status, plan := s.do("POST", "/v1/config-plans",
		`{"config": {"environment_settings": {"display_name": "Shop 2", "default_locale": "en", "session_lifetime_hours": 72}}}`)
	if status != http.StatusCreated {
		t.Fatalf("create plan: %d %v", status, plan)
	}
	tx := s.db.DB.Begin()
	defer tx.Rollback()
	if err := tx.Exec("SELECT id FROM environments WHERE id = ? FOR NO KEY UPDATE", s.envID).Error; err != nil {
		t.Fatalf("lock the environment: %v", err)
	}
	cutOff := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.base+"/v1/config-plans/"+plan["id"].(string)+":apply", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+s.secret)
		resp, err := s.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		cutOff <- err
	}()
	waitFor(t, "the apply to wait for the environment's lock", func() bool {
		var n int64
		err := s.db.DB.Raw("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n).Error
		return err == nil && n > 0
	})
	s.stop()
	select {
	case err := <-s.done:
		if err == nil || !strings.Contains(err.Error(), "still running after 1s") {
			t.Fatalf("run = %v, want the shutdown timeout", err)
		}
		s.done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("run did not give up after the shutdown timeout")
	}
	select {
	case err := <-cutOff:
		if err == nil {
			t.Errorf("the apply got an answer, want its connection cut off")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the apply's connection was not cut off")
	}
	tx.Rollback()
	var st string
	waitFor(t, "the cut-off apply to release its plan", func() bool {
		return s.db.DB.Raw("SELECT status FROM config_plans WHERE id = ?", plan["id"]).Scan(&st).Error == nil && st == "planned"
	})
}

// TestServeMetricsShowPoolsAndPprofOnlyOnDebugListener checks the wiring
// of serve: /metrics shows the database and Redis pools, the runtime and
// the HTTP histogram; pprof answers on KEENAUTHD_DEBUG_LISTEN and not on the
// API's listener.
func TestServeMetricsShowPoolsAndPprofOnlyOnDebugListener(t *testing.T) {
	t.Parallel()
	s := startServe(t, map[string]string{"KEENAUTHD_DEBUG_LISTEN": "127.0.0.1:0"})
	if st, _ := s.do("GET", "/v1/config", ""); st != http.StatusOK {
		t.Fatalf("export = %d", st)
	}
	resp, err := s.client.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`go_sql_open_connections{db_name="primary"}`,
		`keenauthd_redis_pool_connections{state="total"}`,
		`keenauthd_fail_opens_total{component="fleet"} 0`,
		`keenauthd_http_request_duration_seconds_count{method="GET",route="/v1/config",status_class="2xx"} 1`,
		"go_goroutines",
		"process_cpu_seconds_total",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if st, _ := s.do("GET", "/debug/pprof/", ""); st != http.StatusNotFound {
		t.Errorf("pprof on the API listener = %d, want 404", st)
	}
	// The debug listener is logged after "listening on" is printed: poll.
	var debugAddr string
	waitFor(t, "the debug listener's address in the logs", func() bool {
		for _, l := range strings.Split(s.logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil {
				if msg, _ := m["msg"].(string); strings.HasPrefix(msg, "keenauthd debug endpoints") {
					debugAddr, _ = m["addr"].(string)
				}
			}
		}
		return debugAddr != ""
	})
	resp, err = s.client.Get("http://" + debugAddr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("pprof on the debug listener = %d, want 200", resp.StatusCode)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
