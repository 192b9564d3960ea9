package e2e_test

import (
	"bytes"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The product decision of docs/decisions.md: a revoked API key stops working on every
// replica within 1 s (the revocation is published through Redis), and
// within KEENAUTHD_AUTH_CACHE_TTL when Redis cannot deliver the message.

// newKey creates an all-permissions key of the cluster's environment and
// returns its id and secret.
func (c *cluster) newKey() (id, secret string) {
	c.t.Helper()
	var k struct{ ID, Secret string }
	c.decode(c.command("key", "create", "--env", c.EnvID, "--permissions", "all"), &k)
	return k.ID, k.Secret
}

// whoami answers GET /v1/api-keys/current on n with secret.
func whoami(t *testing.T, n *node, secret string) int {
	t.Helper()
	req, err := http.NewRequest("GET", n.URL+"/v1/api-keys/current", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// refusedWithin polls every node with secret until each answers 401, and
// fails t if a node accepted a request sent later than bound after since.
// What is held to the bound is when each request was sent, not when its
// answer came: a request sent just before the bound may be answered
// after it, and the polling's own pace would otherwise count against the
// service.
func refusedWithin(t *testing.T, nodes []*node, secret string, since time.Time, bound time.Duration) {
	t.Helper()
	for i, n := range nodes {
		for {
			sent := time.Now()
			status := whoami(t, n, secret)
			if status == http.StatusUnauthorized {
				break
			}
			if status != http.StatusOK {
				t.Fatalf("replica %d answered %d for a key being revoked", i, status)
			}
			if after := sent.Sub(since); after > bound {
				t.Fatalf("replica %d accepted the revoked key in a request sent %s after its revocation; the bound is %s", i, after, bound)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestRevokedKeyStopsWorkingOnEveryReplicaWithinASecond(t *testing.T) {
	// With an hour of cache, only the published revocation can stop the key.
	c := newCluster(t, 2, "KEENAUTHD_AUTH_CACHE_TTL=1h")
	id, secret := c.newKey()
	for round := range 3 { // the cache is filled, then the key is served from it
		for i, n := range c.Nodes {
			if status := whoami(t, n, secret); status != http.StatusOK {
				t.Fatalf("round %d: replica %d answered %d for a new key", round, i, status)
			}
		}
	}
	// Revoked in the database alone, the key is still served from the
	// replicas' caches: nothing told them.
	if err := c.DB.DB.Exec("UPDATE api_keys SET revoked_at = now() WHERE id = ?", id).Error; err != nil {
		t.Fatal(err)
	}
	for i, n := range c.Nodes {
		if status := whoami(t, n, secret); status != http.StatusOK {
			t.Fatalf("replica %d answered %d: the key was not served from its cache", i, status)
		}
	}
	// keenauthd key revoke publishes the revocation (the key was revoked
	// already: the command still tells the fleet).
	c.command("key", "revoke", id)
	refusedWithin(t, c.Nodes, secret, time.Now(), time.Second)
	// The other key is not affected.
	for i, n := range c.Nodes {
		if status := whoami(t, n, c.Secret); status != http.StatusOK {
			t.Errorf("replica %d answered %d for a key that was not revoked", i, status)
		}
	}
}

func TestRevokedKeyStopsWorkingWithinTheCacheTTLWhenRedisCannotDeliverTheRevocation(t *testing.T) {
	const ttl = 2 * time.Second
	c := newCluster(t, 2, "KEENAUTHD_AUTH_CACHE_TTL="+ttl.String())
	id, secret := c.newKey()
	for i, n := range c.Nodes {
		if status := whoami(t, n, secret); status != http.StatusOK {
			t.Fatalf("replica %d answered %d for a new key", i, status)
		}
	}
	// The revoking process cannot reach Redis: nothing is published.
	cmd := exec.Command(binary, "key", "revoke", id)
	cmd.Env = append(append([]string{}, c.env...), "KEENAUTHD_REDIS_URL=redis://127.0.0.1:1/0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("key revoke without Redis: %v\n%s", err, stderr.String())
	}
	revoked := time.Now()
	if !strings.Contains(stdout.String(), `"revoked":true`) || !strings.Contains(stderr.String(), "could not be published") ||
		!strings.Contains(stderr.String(), "KEENAUTHD_AUTH_CACHE_TTL (2s)") || strings.Contains(stderr.String(), "redis: ") {
		t.Errorf("key revoke without Redis printed %q, warned %q; want its one warning, without go-redis's own lines", stdout.String(), stderr.String())
	}
	if n := c.count("SELECT count(*) FROM api_keys WHERE id = ? AND revoked_at IS NOT NULL", id); n != 1 {
		t.Fatalf("the key is not revoked in the database (%d rows)", n)
	}
	refusedWithin(t, c.Nodes, secret, revoked, ttl)
}
