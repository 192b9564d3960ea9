// Package console_test runs the support console in a real browser: it
// builds keenauthd, serves it over a fresh PostgreSQL database and a
// redis-server of its own, creates an environment and two keys (every
// permission; reads only), a second environment with three keys of named
// owners for the review of plans, and runs the Playwright scripts of test/browser
// (node --test) against it in Debian's Chromium. The scripts seed plans
// over the API themselves and write screenshots to test/browser/screenshots.
package console_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/procs"
	"github.com/keenauth/configplans/test/testdb"
)

// binary is keenauthd, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(procs.Main(m, &binary))
}

// readPermissions are those of a support person: every read, no write.
func readPermissions() []string {
	var out []string
	for _, p := range config.AllPermissions() {
		if strings.HasSuffix(p, ":read") {
			out = append(out, p)
		}
	}
	return out
}

func TestConsoleInChromium(t *testing.T) {
	chromium := testdb.RequireBinary(t, "chromium", "make browser-deps (apt-get install -y chromium)")
	node := testdb.RequireBinary(t, "node", "apt-get install -y nodejs npm")
	dir, err := filepath.Abs("../browser")
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"playwright-core", "axe-core"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("test/browser/node_modules/%s is missing (CI is set, so this fails instead of skipping): make browser-deps", pkg)
			}
			t.Skipf("test/browser/node_modules/%s is missing: make browser-deps (under CI=true this fails)", pkg)
		}
	}

	db := testdb.New(t)
	rs := procs.StartRedis(t)
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"KEENAUTHD_DATABASE_URL=" + db.URL,
		"KEENAUTHD_REDIS_URL=" + rs.URL(),
		"KEENAUTHD_LISTEN=127.0.0.1:0",
		"KEENAUTHD_IDEMPOTENCY_SECRET=console-idempotency-secret",
		"KEENAUTHD_INTERNAL_TOKEN=console-internal-token",
		"KEENAUTHD_LOG_LEVEL=info",
		// The Webhooks page's test: an endpoint on a closed local port,
		// whose deliveries fail after one quick retry.
		"KEENAUTHD_WEBHOOK_ALLOW_HTTP=true",
		"KEENAUTHD_WEBHOOK_ALLOW_PRIVATE=true",
		"KEENAUTHD_WEBHOOK_RETRY_SCHEDULE=100ms",
	}
	procs.Command(t, binary, env, "migrate")
	var environment struct{ ID string }
	decode(t, procs.Command(t, binary, env, "env", "create", "--name", "Shop"), &environment)
	key := func(perms string) string {
		var k struct{ Secret string }
		decode(t, procs.Command(t, binary, env, "key", "create", "--env", environment.ID, "--permissions", perms), &k)
		return k.Secret
	}
	all, read := key("all"), key(strings.Join(readPermissions(), ","))
	// A second environment for the review of plans (§17): the browser
	// suite sets its required_approvals to 2. Alice plans and applies,
	// Bob (every permission) and Carol (config:approve and the reads)
	// review.
	var reviewed struct{ ID string }
	decode(t, procs.Command(t, binary, env, "env", "create", "--name", "Shop reviewed"), &reviewed)
	ownedKey := func(perms, owner string) string {
		var k struct{ Secret string }
		decode(t, procs.Command(t, binary, env, "key", "create", "--env", reviewed.ID, "--permissions", perms, "--owner", owner), &k)
		return k.Secret
	}
	alice, bob := ownedKey("all", "alice@shop.example"), ownedKey("all", "bob@shop.example")
	carol := ownedKey(strings.Join(append(readPermissions(), config.PermConfigApprove), ","), "carol@shop.example")
	n := procs.Serve(t, binary, env)

	cmd := exec.Command(node, "--test", "--test-concurrency=1", "--test-reporter=spec", "console.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"CONSOLE_URL="+n.URL,
		"CONSOLE_ENVIRONMENT="+environment.ID,
		"CONSOLE_KEY_ALL="+all,
		"CONSOLE_KEY_READ="+read,
		"CONSOLE_REVIEW_ENVIRONMENT="+reviewed.ID,
		"CONSOLE_KEY_ALICE="+alice,
		"CONSOLE_KEY_BOB="+bob,
		"CONSOLE_KEY_CAROL="+carol,
		"CONSOLE_INTERNAL_TOKEN=console-internal-token",
		"CHROMIUM="+chromium,
		"SCREENSHOTS="+filepath.Join(dir, "screenshots"),
	)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the browser suite failed: %v\nkeenauthd logs:\n%s", err, n.Logs())
	}
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}
