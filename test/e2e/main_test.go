package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/test/procs"
	"github.com/keenauth/configplans/test/testdb"
)

// binary is keenauthd, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(procs.Main(m, &binary))
}

// cluster is a database, a redis-server of its own, an environment with an
// all-permissions key, and the keenauthd processes serving them.
type cluster struct {
	t      *testing.T
	DB     *testdb.Database
	Redis  *redis.Client // database 0 of the cluster's own redis-server: a test may FLUSHDB it
	env    []string
	EnvID  string
	Secret string
	Nodes  []*node

	// RedisServer is the redis-server of Redis (a test may kill it).
	RedisServer *procs.RedisServer
}

// node is one keenauthd serve process.
type node = procs.Node

// newCluster prepares a database as an operator would (migrate, env
// create, key create) and starts n serve processes on it. extra adds
// KEENAUTHD_* variables.
func newCluster(t *testing.T, n int, extra ...string) *cluster {
	t.Helper()
	rs := procs.StartRedis(t)
	c := &cluster{t: t, DB: testdb.New(t), Redis: rs.Client(t), RedisServer: rs}
	c.env = append([]string{
		"KEENAUTHD_DATABASE_URL=" + c.DB.URL,
		"KEENAUTHD_REDIS_URL=" + rs.URL(),
		"KEENAUTHD_LISTEN=127.0.0.1:0",
		"KEENAUTHD_IDEMPOTENCY_SECRET=e2e-idempotency-secret",
		"KEENAUTHD_INTERNAL_TOKEN=e2e-internal-token",
		"KEENAUTHD_LOG_LEVEL=info",
	}, extra...)
	c.command("migrate")
	var env struct{ ID string }
	c.decode(c.command("env", "create", "--name", "Shop"), &env)
	var key struct{ Secret string }
	c.decode(c.command("key", "create", "--env", env.ID, "--permissions", "all"), &key)
	if env.ID == "" || !strings.HasPrefix(key.Secret, "ksk_") {
		t.Fatalf("env %q, key %q", env.ID, key.Secret)
	}
	c.EnvID, c.Secret = env.ID, key.Secret
	for range n {
		c.Nodes = append(c.Nodes, c.start())
	}
	return c
}

// command runs a one-shot keenauthd command and returns its standard output.
func (c *cluster) command(args ...string) []byte {
	c.t.Helper()
	return procs.Command(c.t, binary, c.env, args...)
}

func (c *cluster) decode(b []byte, v any) {
	c.t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		c.t.Fatalf("decode %s: %v", b, err)
	}
}

// start runs keenauthd serve until the test ends, and waits until it
// listens and has logged so.
func (c *cluster) start() *node {
	c.t.Helper()
	return procs.Serve(c.t, binary, c.env)
}

// answer is an HTTP answer.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a answer) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(a.Body, &m)
	return m
}

func (a answer) Code() string {
	s, _ := a.JSON()["code"].(string)
	return s
}

func (a answer) Replayed() bool { return a.Header.Get("Idempotent-Replayed") == "true" }

var client = &http.Client{Timeout: 30 * time.Second}

// do sends a request to a node; body is JSON-encoded unless nil.
func (c *cluster) do(n *node, method, path string, body any, key string) answer {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, n.URL+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		c.t.Errorf("%s %s: %v", method, path, err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// plan creates a plan that adds one API and returns its id.
func (c *cluster) plan(name string) string {
	c.t.Helper()
	doc := map[string]any{"apis": map[string]any{name: map[string]any{
		"identifier": "https://api.shop.example/" + name, "display_name": "API " + name, "token_lifetime_seconds": 3600}}}
	a := c.do(c.Nodes[0], "POST", "/v1/config-plans", map[string]any{"config": doc}, "")
	if a.Status != http.StatusCreated {
		c.t.Fatalf("create plan: %d %s", a.Status, a.Body)
	}
	return a.JSON()["id"].(string)
}

func applyPath(planID string) string { return "/v1/config-plans/" + planID + ":apply" }

func (c *cluster) count(query string, args ...any) int64 {
	c.t.Helper()
	var n int64
	if err := c.DB.DB.Raw(query, args...).Scan(&n).Error; err != nil {
		c.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// appliedOnce fails the test unless the plan was applied exactly once: one
// apply_started event, one revision, one config.applied entry.
func (c *cluster) appliedOnce(planID string) {
	c.t.Helper()
	started := c.count("SELECT count(*) FROM plan_events WHERE plan_id = ? AND type = 'apply_started'", planID)
	revs := c.count("SELECT count(*) FROM config_revisions WHERE plan_id = ?", planID)
	logs := c.count("SELECT count(*) FROM management_logs WHERE plan_id = ? AND type = 'config.applied'", planID)
	if started != 1 || revs != 1 || logs != 1 {
		c.t.Fatalf("plan %s: %d apply_started, %d revisions, %d config.applied; want one each", planID, started, revs, logs)
	}
}
