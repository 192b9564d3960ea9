package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/test/testdb"
)

func TestNewRedisURLForms(t *testing.T) {
	t.Parallel()
	single, err := newRedis("redis://127.0.0.1:6379/3")
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	if c, ok := single.(*redis.Client); !ok || c.Options().DB != 3 {
		t.Errorf("redis:// gave %T, want a single-node client of database 3", single)
	}
	for _, tc := range []struct {
		url   string
		addrs []string
		tls   bool
	}{
		{"redis+cluster://u:p@10.0.0.1:7000?addr=10.0.0.2:7001&addr=10.0.0.3:7002", []string{"10.0.0.1:7000", "10.0.0.2:7001", "10.0.0.3:7002"}, false},
		{"rediss+cluster://10.0.0.1:7000/", []string{"10.0.0.1:7000"}, true},
	} {
		rdb, err := newRedis(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		c, ok := rdb.(*redis.ClusterClient)
		if !ok {
			t.Fatalf("%s gave %T, want a cluster client", tc.url, rdb)
		}
		opt := c.Options()
		if fmt.Sprint(opt.Addrs) != fmt.Sprint(tc.addrs) || (opt.TLSConfig != nil) != tc.tls {
			t.Errorf("%s: addrs %v, TLS %v; want %v, %v", tc.url, opt.Addrs, opt.TLSConfig != nil, tc.addrs, tc.tls)
		}
		c.Close()
	}
	for _, bad := range []string{"redis+cluster://10.0.0.1:7000/2", "redis+cluster://10.0.0.1:7000?addr=nope", "redis+cluster://10.0.0.1:7000?db=1"} {
		if _, err := newRedis(bad); err == nil || !strings.Contains(err.Error(), "KEENAUTHD_REDIS_URL") || !strings.Contains(err.Error(), "redis+cluster://") {
			t.Errorf("%s: error %v, want one naming KEENAUTHD_REDIS_URL and the cluster URL form", bad, err)
		}
	}
}

// TestServeOnRedisCluster: serve over a Redis Cluster answers keyed
// requests whatever node their keys live on, and refuses at start a
// single-node URL pointed at a member, and a /db path in cluster mode.
func TestServeOnRedisCluster(t *testing.T) {
	t.Parallel()
	cluster := testdb.StartRedisCluster(t)

	s := startServe(t, map[string]string{"KEENAUTHD_REDIS_URL": cluster.URL()})
	// The keys of one environment (rate limits) and of one API key
	// (idempotency) share a slot: several environments put them on every
	// master.
	secrets := []string{s.secret}
	for range 5 {
		secrets = append(secrets, s.newEnvironmentKey())
	}
	for i, secret := range secrets {
		for j := range 2 {
			body := fmt.Sprintf(`{"config": {"environment_settings": {"display_name": "Shop %d", "default_locale": "en", "session_lifetime_hours": 72}}}`, j)
			key := fmt.Sprintf("cluster-%d-%d", i, j)
			first, _ := s.doKeyed(secret, "/v1/config-plans", body, key)
			again, replayed := s.doKeyed(secret, "/v1/config-plans", body, key)
			if first != http.StatusCreated || again != http.StatusCreated || !replayed {
				t.Fatalf("environment %d, request %d: %d then %d (replayed %v); want 201 and its replay\n%s", i, j, first, again, replayed, s.logs.String())
			}
		}
	}
	for _, line := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(line, "failed open") && (strings.Contains(line, "MOVED") || strings.Contains(line, "ASK") || strings.Contains(line, "CROSSSLOT")) {
			t.Errorf("a rate limit failed open on a redirection: %s", line)
		}
	}

	db := testdb.New(t)
	for _, tc := range []struct{ url, want string }{
		{"redis://" + cluster.Addrs()[0], "member of a Redis Cluster"},
		{strings.Replace(cluster.URL(), "?", "/0?", 1), "remove the /0 path"},
	} {
		vars := map[string]string{"KEENAUTHD_DATABASE_URL": db.URL, "KEENAUTHD_REDIS_URL": tc.url,
			"KEENAUTHD_LISTEN": "127.0.0.1:0", "KEENAUTHD_IDEMPOTENCY_SECRET": "serve-test-secret"}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := run(ctx, []string{"serve"}, func(k string) string { return vars[k] }, io.Discard, io.Discard)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "KEENAUTHD_REDIS_URL") ||
			!strings.Contains(err.Error(), "redis+cluster://") || exitCode(err) == 0 {
			t.Errorf("serve with KEENAUTHD_REDIS_URL=%s: %v; want a start error saying %q and naming the variable and the cluster URL form", tc.url, err, tc.want)
		}
	}
}

// doKeyed sends a POST with an Idempotency-Key and returns the status and
// whether it was a replay.
func (s *server) doKeyed(secret, path, body, key string) (int, bool) {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true"
}

// newEnvironmentKey creates another environment and an all-permissions key
// of it with the commands, and returns the key's secret.
func (s *server) newEnvironmentKey() string {
	s.t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"env", "create", "--name", "Other"}, s.getenv, &out, io.Discard); err != nil {
		s.t.Fatalf("env create: %v", err)
	}
	var env struct{ ID string }
	_ = json.Unmarshal(out.Bytes(), &env)
	out.Reset()
	if err := run(context.Background(), []string{"key", "create", "--env", env.ID, "--permissions", "all"}, s.getenv, &out, io.Discard); err != nil {
		s.t.Fatalf("key create: %v", err)
	}
	var key struct{ Secret string }
	_ = json.Unmarshal(out.Bytes(), &key)
	return key.Secret
}
