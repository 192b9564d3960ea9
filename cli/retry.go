package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxBackoff caps the wait between attempts that the API gave no
// Retry-After for.
const maxBackoff = 15 * time.Second

// retryable decides whether an attempt is tried again, after how long, and
// why (announced on standard error). It retries what cannot have been half
// done, or that an Idempotency-Key makes safe to send again:
//   - a failure to connect at all, whatever the request: nothing was sent;
//   - 429 rate_limited and 503 service_unavailable, after Retry-After;
//   - 502 and 504 from a gateway in front of the API;
//   - 409 idempotency_key_in_use: the first attempt of this key still runs;
//   - a failure to get any answer once connected.
//
// Past a failure to connect, a POST is retried only when it carries an
// Idempotency-Key.
func retryable(r request, resp *response, err error, attempt int) (time.Duration, string, bool) {
	if err != nil && unreachable(err) {
		return withJitter(backoff(attempt)), "cannot reach the API (" + describeNetworkError(err) + ")", true
	}
	if r.method != http.MethodGet && r.idempotencyKey == "" {
		return 0, "", false
	}
	if err != nil {
		return withJitter(backoff(attempt)), "no answer from the API (" + describeNetworkError(err) + ")", true
	}
	var reason string
	switch resp.status {
	case http.StatusTooManyRequests:
		reason = "rate limited"
		if p := problemPolicy(resp.body); p != "" {
			reason += " (" + p + ")"
		}
	case http.StatusServiceUnavailable:
		reason = "the service is unavailable"
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		reason = fmt.Sprintf("the gateway answered HTTP %d", resp.status)
	case http.StatusConflict:
		if problemCode(resp.body) != "idempotency_key_in_use" {
			return 0, "", false
		}
		reason = "the first attempt with this Idempotency-Key is still running"
	default:
		return 0, "", false
	}
	if d, ok := retryAfter(resp.header.Get("Retry-After"), time.Now()); ok {
		return withJitter(d), reason, true
	}
	return withJitter(backoff(attempt)), reason, true
}

// backoff is 1 s doubled for each attempt, up to maxBackoff.
func backoff(attempt int) time.Duration {
	d := time.Second << min(attempt-1, 8)
	return min(d, maxBackoff)
}

// withJitter adds up to a quarter of d (at most a second), never less
// than d: the server said not before then, and clients retrying together
// should not come back together.
func withJitter(d time.Duration) time.Duration {
	j := min(d/4, time.Second)
	if j <= 0 {
		return d
	}
	return d + rand.N(j)
}

// retryAfter parses a Retry-After header: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func problemCode(body []byte) string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &p)
	return p.Code
}

func problemPolicy(body []byte) string {
	var p struct {
		Policy string `json:"policy"`
	}
	_ = json.Unmarshal(body, &p)
	return p.Policy
}

// roundWait writes a wait readably: whole seconds, or hundredths below one.
func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// waiter returns the wait between attempts. Every retry is announced on
// standard error with one line, on a terminal or in a CI log alike: a run
// that waits says why, and a CI log shows what the time went on.
func waiter(stderr io.Writer) func(ctx context.Context, d time.Duration, announce string) error {
	return func(ctx context.Context, d time.Duration, announce string) error {
		fmt.Fprintf(stderr, "keenauth: %s\n", announce)
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		}
	}
}
