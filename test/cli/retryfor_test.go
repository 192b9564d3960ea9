package cli_test

import (
	"net"
	"regexp"
	"strings"
	"testing"
)

// closedURL is the URL of a port that nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

var retryLine = regexp.MustCompile(`(?m)^keenauth: cannot reach the API \(dial tcp [^)]*connection refused\); retrying in [0-9.]+m?s \(attempt (\d+); --retry-for 2s, \d+s left\)$`)

// TestAServerThatCannotBeReachedIsRetriedForRetryForThenExits1 runs a GET,
// a POST and an apply against a closed port with --retry-for 2s: each is
// retried (after 1 s and a little jitter, the next wait would pass the 2 s),
// every retry announced on standard error, then exits 1.
func TestAServerThatCannotBeReachedIsRetriedForRetryForThenExits1(t *testing.T) {
	t.Parallel()
	closed := closedURL(t)
	doc := writeJSON(t, "doc.json", map[string]any{"connections": map[string]any{"legacy": legacySpec()}})
	for _, args := range [][]string{
		{"plans", "list"},
		{"config", "plan", "-f", doc},
		{"config", "apply", "cfgp_01m4qpqtywfs7930tb6kqn5rc5", "--idempotency-key", "k1"},
		{"whoami", "--json"},
		{"connections", "test", "acme-sso"},
		{"config", "plan", "-f", doc, "--detailed-exitcode"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			t.Parallel()
			r := runAgainst(t, closed, invocation{}, append(args, "--retry-for", "2s")...)
			wantExit(t, r, 1)
			announced := retryLine.FindAllStringSubmatch(r.stderr, -1)
			if len(announced) != 1 || announced[0][1] != "2" {
				t.Errorf("want one announced retry (attempt 2):\n%s", r.stderr)
			}
			for _, want := range []string{"Error: cannot reach the API at " + closed + ": dial tcp ", "connection refused.\n",
				"  gave up after 2 attempts in 1s; --retry-for sets how long to keep trying\n"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout: %q", r.stdout)
			}
		})
	}
}

func TestRetryForIs30sByDefault(t *testing.T) {
	t.Parallel()
	r := must(t, runCLI(t, map[string]string{}, invocation{}, "plans", "list", "--help"))
	if !regexp.MustCompile(`--retry-for duration +how long in all .*\(default 30s\)`).MatchString(r.stdout) {
		t.Errorf("--help:\n%s", r.stdout)
	}
}
