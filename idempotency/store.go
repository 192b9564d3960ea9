package idempotency

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"
)

var (
	// ErrLeaseLost means the token no longer owns the record: its lease ran
	// out and the record expired or another request claimed it, or it was
	// already completed or released.
	ErrLeaseLost = errors.New("idempotency lease lost")
	// ErrUnavailable wraps every failure to reach the store (network,
	// timeout, Redis error, cancelled context). Callers answer 503 when a
	// claim fails this way, and run nothing.
	ErrUnavailable = errors.New("idempotency store unavailable")
)

// DefaultRetention is how long a finished response is kept for replay.
const DefaultRetention = 24 * time.Hour

// finishTimeout bounds CompleteWithoutCancel, ReleaseWithoutCancel and each
// renewal of Hold, which run detached from the request's context.
const finishTimeout = 3 * time.Second

// MaxStoredBody is the largest answer body a record keeps (§23): a larger
// answer is not stored and a retry of its key runs again.
const MaxStoredBody = 1 << 20

// Response is what is kept of a finished request to answer its retries: the
// status, the headers worth replaying (Content-Type, Location, …; never
// Request-Id or the rate-limit headers, which describe the retry itself), and
// the body as sent. Responses never carry secrets, so the body is stored
// as it is.
type Response struct {
	Status int
	Header map[string]string
	Body   []byte
}

// Storable reports whether a response is kept for replay (SPEC §9). code is
// the problem's code, "" for a success.
//
// Kept: every 2xx, 501, and the 4xx that the operation itself decided (not
// found, forbidden, expired, conflicts, validation, …). Not kept, so that a
// retry runs again: 400 (the request never reached the operation), 401,
// 408, 429 and the refusals of the idempotency layer itself
// (idempotency_key_in_use, idempotency_key_mismatch) and of the body limit
// (request_too_large); every other 5xx, 1xx and 3xx.
func Storable(status int, code string) bool {
	switch {
	case status >= 200 && status < 300:
		return true
	case status == http.StatusNotImplemented:
		return true
	case status >= 400 && status < 500:
		switch status {
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusRequestTimeout, http.StatusTooManyRequests:
			return false
		}
		switch code {
		case "idempotency_key_in_use", "idempotency_key_mismatch", "invalid_idempotency_key",
			"request_too_large", "rate_limited", "unauthenticated":
			return false
		}
		return true
	default:
		return false
	}
}

// Outcome is the answer of Store.Claim.
type Outcome int

const (
	// Claimed: the request owns the key and runs; ClaimResult.Token proves it.
	Claimed Outcome = iota + 1
	// Replay: the same request already finished; answer ClaimResult.Response
	// with Idempotent-Replayed: true.
	Replay
	// Mismatch: the key was used for another request (422
	// idempotency_key_mismatch), finished or still running.
	Mismatch
	// InUse: the same request is still running (409 idempotency_key_in_use,
	// Retry-After from ClaimResult.RetryAfter).
	InUse
)

func (o Outcome) String() string {
	switch o {
	case Claimed:
		return "claimed"
	case Replay:
		return "replay"
	case Mismatch:
		return "mismatch"
	case InUse:
		return "in_use"
	default:
		return fmt.Sprintf("Outcome(%d)", int(o))
	}
}

// ClaimResult is the answer of Store.Claim.
type ClaimResult struct {
	Outcome Outcome
	// Token is the owner token, when Claimed. Renew, Complete and Release
	// need it.
	Token string
	// Response is the stored response, when Replay.
	Response *Response
	// RetryAfter is what is left of the running request's lease, rounded up
	// to whole seconds and at least 1s, when InUse.
	RetryAfter time.Duration
}

// Store keeps idempotency records. A record is addressed by a scope (the API
// key's id) and the client's key. Every operation is atomic and, for Redis,
// one round trip. Every failure to reach the store wraps ErrUnavailable.
type Store interface {
	// Claim looks up scope+key. Absent: it writes an in-flight record (the
	// fingerprint and a new owner token) that lives for lease, and answers
	// Claimed. Present with another fingerprint: Mismatch, whether finished or
	// in flight. Same fingerprint: Replay with the stored response when
	// finished, InUse while in flight.
	Claim(ctx context.Context, scope, key, fingerprint string, lease time.Duration) (ClaimResult, error)
	// Renew extends the in-flight lease to lease from now, only while token
	// owns it; ErrLeaseLost otherwise.
	Renew(ctx context.Context, scope, key, token string, lease time.Duration) error
	// Complete turns the in-flight record into a finished one holding resp,
	// kept for retention, only while token owns it; ErrLeaseLost otherwise.
	Complete(ctx context.Context, scope, key, token string, resp Response, retention time.Duration) error
	// Release deletes the in-flight record, only while token owns it;
	// ErrLeaseLost otherwise (nothing to do for the caller but log it).
	Release(ctx context.Context, scope, key, token string) error
}

// CompleteWithoutCancel is Store.Complete detached from the cancellation of
// ctx (its values are kept) and bounded by a short timeout of its own: the
// response of an operation that ran must be stored even when the client has
// gone away.
func CompleteWithoutCancel(ctx context.Context, s Store, scope, key, token string, resp Response, retention time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	return s.Complete(ctx, scope, key, token, resp, retention)
}

// ReleaseWithoutCancel is Store.Release detached from the cancellation of
// ctx and bounded by a short timeout of its own, so that a retry can run at
// once instead of waiting for the lease to pass.
func ReleaseWithoutCancel(ctx context.Context, s Store, scope, key, token string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	return s.Release(ctx, scope, key, token)
}

// newToken returns a 128-bit random owner token in hex.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand.Read crashes the program instead)
	return hexString(b[:])
}

// retryAfter rounds the rest of a lease up to whole seconds, at least 1s.
func retryAfter(remaining time.Duration) time.Duration {
	if remaining < time.Second {
		return time.Second
	}
	return (remaining + time.Second - 1).Truncate(time.Second)
}

// checkTTL refuses durations that Redis cannot express in milliseconds.
func checkTTL(name string, d time.Duration) error {
	if d < time.Millisecond {
		return fmt.Errorf("idempotency: %s %v is shorter than 1ms", name, d)
	}
	return nil
}

// unavailable wraps a failure to reach the store.
func unavailable(op string, err error) error {
	return fmt.Errorf("idempotency %s: %w: %w", op, ErrUnavailable, err)
}

func errLeaseLost(op string) error {
	return fmt.Errorf("idempotency %s: %w", op, ErrLeaseLost)
}
