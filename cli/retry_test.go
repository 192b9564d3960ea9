package cli

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func TestRetryAfterParsesSecondsAndDates(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"0":                             0,
		"7":                             7 * time.Second,
		" 2 ":                           2 * time.Second,
		"Sun, 01 Jun 2025 12:00:09 GMT": 9 * time.Second,
		"Sun, 01 Jun 2025 11:00:00 GMT": 0,
	} {
		got, ok := retryAfter(v, now)
		if !ok || got != want {
			t.Errorf("retryAfter(%q) = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "-1", "soon", "1.5"} {
		if _, ok := retryAfter(v, now); ok {
			t.Errorf("retryAfter(%q) accepted", v)
		}
	}
}

func TestJitterNeverShortensTheWait(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, time.Millisecond, time.Second, 30 * time.Second} {
		for range 200 {
			got := withJitter(d)
			if got < d || got > d+min(d/4, time.Second) {
				t.Fatalf("withJitter(%v) = %v", d, got)
			}
		}
	}
}

func TestRetryableOnlyWhatIsSafe(t *testing.T) {
	t.Parallel()
	withKey := request{method: http.MethodPost, idempotencyKey: "k"}
	noKey := request{method: http.MethodPost}
	get := request{method: http.MethodGet}
	answer := func(status int, retryAfter, body string) *response {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &response{status: status, header: h, body: []byte(body)}
	}
	netErr := errors.New("connection reset by peer")
	dialErr := &url.Error{Op: "Post", URL: "http://x", Err: &dialError{err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}}
	cases := []struct {
		name    string
		r       request
		resp    *response
		err     error
		retry   bool
		atLeast time.Duration
	}{
		{"429 with key", withKey, answer(429, "3", `{"code":"rate_limited","policy":"config_plan_inflight"}`), nil, true, 3 * time.Second},
		{"503 GET", get, answer(503, "1", `{"code":"service_unavailable"}`), nil, true, time.Second},
		{"503 without Retry-After backs off", get, answer(503, "", ""), nil, true, time.Second},
		{"502 from a gateway", withKey, answer(502, "", "bad gateway"), nil, true, time.Second},
		{"504 from a gateway", get, answer(504, "", ""), nil, true, time.Second},
		{"key in use", withKey, answer(409, "1", `{"code":"idempotency_key_in_use"}`), nil, true, time.Second},
		{"network failure", withKey, nil, netErr, true, time.Second},
		{"POST without a key", noKey, answer(503, "1", ""), nil, false, 0},
		{"POST without a key, network", noKey, nil, netErr, false, 0},
		{"POST without a key, not connected: nothing was sent", noKey, nil, dialErr, true, time.Second},
		{"GET, not connected", get, nil, dialErr, true, time.Second},
		{"conflict", withKey, answer(409, "", `{"code":"config_conflict"}`), nil, false, 0},
		{"500", withKey, answer(500, "", `{"code":"internal_error"}`), nil, false, 0},
		{"422", withKey, answer(422, "", `{"code":"validation_failed"}`), nil, false, 0},
	}
	for _, c := range cases {
		d, reason, retry := retryable(c.r, c.resp, c.err, 1)
		if retry != c.retry {
			t.Errorf("%s: retry = %v", c.name, retry)
			continue
		}
		if retry && (d < c.atLeast || reason == "") {
			t.Errorf("%s: wait %v (at least %v), reason %q", c.name, d, c.atLeast, reason)
		}
	}
	if _, reason, _ := retryable(withKey, answer(429, "1", `{"code":"rate_limited","policy":"config_plan"}`), nil, 1); reason != "rate limited (config_plan)" {
		t.Errorf("429 reason = %q", reason)
	}
	if _, reason, _ := retryable(noKey, nil, dialErr, 1); reason != "cannot reach the API (dial tcp 127.0.0.1:9: connect: connection refused)" {
		t.Errorf("reason of a failed connection = %q", reason)
	}
}

func TestBackoffDoublesUpToItsCap(t *testing.T) {
	t.Parallel()
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, maxBackoff, maxBackoff}
	for i, w := range want {
		if got := backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := backoff(100); got != maxBackoff {
		t.Errorf("backoff(100) = %v", got)
	}
}
