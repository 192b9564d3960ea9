package service

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/idempotency"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/ratelimit"
)

// maxInUseWait caps the Retry-After of idempotency_key_in_use, in seconds.
const maxInUseWait = 2

var invalidIdempotencyKey = &config.Error{Code: config.CodeInvalidIdempotencyKey,
	Detail: "Idempotency-Key must be one header line: a token or a quoted string of 1 to 255 visible ASCII characters"}

// idempotent runs op under the Idempotency-Key of the request, if any (§9):
// an atomic claim, a lease renewed while op runs, the stored answer replayed
// for a retry with the same request, and refusals for a key in use or
// reused with another request. op gets the request's keyed fingerprint
// ("" without a key). Without the header, op simply runs.
func (s *Server) idempotent(c *gin.Context, body []byte, op func(ctx context.Context, fingerprint string) response) {
	key, err := idempotency.ParseKey(c.Request.Header.Values("Idempotency-Key"))
	if err != nil {
		s.fail(c, invalidIdempotencyKey)
		return
	}
	if key == "" || s.d.Idempotency == nil {
		s.write(c, op(c.Request.Context(), ""))
		return
	}
	params := map[string]string{}
	for _, p := range c.Params {
		params[p.Key] = p.Value
	}
	// An empty body means {} on every POST that takes one, so the two are
	// the same request.
	fpBody := body
	if len(bytes.TrimSpace(body)) == 0 {
		fpBody = []byte("{}")
	}
	fp := idempotency.Fingerprint(s.d.IdempotencySecret, c.Request.Method, c.FullPath(), params, c.Request.URL.RawQuery, fpBody)
	scope := actor(c).APIKeyID
	claim, err := s.d.Idempotency.Claim(c.Request.Context(), scope, key, fp, s.d.IdempotencyLease)
	if err != nil {
		s.observeIdempotency("store_unavailable")
		s.d.Log.WarnContext(c, "idempotency store unavailable", "request_id", requestID(c), "error", err)
		s.fail(c, &config.Error{Code: config.CodeServiceUnavailable, Detail: "the idempotency store is unavailable; the request did not run",
			Extra: map[string]any{"retry_after": 1}})
		return
	}
	s.observeClaim(claim.Outcome)
	switch claim.Outcome {
	case idempotency.Replay:
		s.write(c, replayed(claim.Response))
		return
	case idempotency.Mismatch:
		s.fail(c, &config.Error{Code: config.CodeIdempotencyKeyMismatch, Detail: "this Idempotency-Key was used with another request"})
		return
	case idempotency.InUse:
		// The lease only bounds how long a dead owner keeps the key; a live
		// one finishes within seconds, so the client is told to come back soon.
		secs := min(int(math.Ceil(claim.RetryAfter.Seconds())), maxInUseWait)
		s.fail(c, &config.Error{Code: config.CodeIdempotencyKeyInUse, Detail: "a request with this Idempotency-Key is still running",
			Extra: map[string]any{"retry_after": max(secs, 1)}})
		return
	}
	holder := idempotency.Hold(c.Request.Context(), s.d.Idempotency, scope, key, claim.Token, s.d.IdempotencyLease)
	finished := false
	defer func() {
		if finished {
			return
		}
		// op panicked (recover answers the 500): release the key, so that a
		// retry runs again at once instead of waiting out the lease.
		holder.Stop()
		if err := idempotency.ReleaseWithoutCancel(c.Request.Context(), s.d.Idempotency, scope, key, claim.Token); err != nil {
			s.d.Log.WarnContext(c, "releasing an idempotency key failed; its lease will", "request_id", requestID(c), "error", err)
		}
	}()
	r := op(c.Request.Context(), s.keyedFingerprint(scope, key, fp))
	finished = true
	holder.Stop()
	if holder.LeaseLost() {
		s.leaseLost("idempotency")()
		s.d.Log.WarnContext(c, "idempotency lease lost while the request ran", "request_id", requestID(c))
	}
	s.settleKey(c, scope, key, claim.Token, &r)
	s.write(c, r)
}

// settleKey ends the hold of an Idempotency-Key whose request ran and was
// answered r: the answer is stored for the retries when it may be, else the
// key is released so that a retry runs again.
func (s *Server) settleKey(c *gin.Context, scope, key, token string, r *response) {
	storable := idempotency.Storable(r.status, string(r.code))
	if storable {
		r.held()
	}
	if storable && len(r.body) > idempotency.MaxStoredBody {
		// Too large to keep in Redis for a day (§23): the key is released
		// and a retry runs again (an apply's retry is still answered from
		// PostgreSQL as a replay; a plan creation's makes another plan).
		storable = false
		s.d.Log.InfoContext(c, "an idempotent answer is too large to store; a retry runs again", "request_id", requestID(c), "bytes", len(r.body))
	}
	if storable {
		stored := idempotency.Response{Status: r.status, Header: map[string]string{}, Body: r.body}
		for _, h := range []string{"Content-Type", "Location", "Idempotent-Replayed"} {
			if v := r.header.Get(h); v != "" {
				stored.Header[h] = v
			}
		}
		if err := idempotency.CompleteWithoutCancel(c.Request.Context(), s.d.Idempotency, scope, key, token, stored, idempotency.DefaultRetention); err != nil {
			// The operation ran: the client still gets its real answer.
			s.d.Log.WarnContext(c, "storing an idempotent response failed", "request_id", requestID(c), "error", err)
		}
	} else if err := idempotency.ReleaseWithoutCancel(c.Request.Context(), s.d.Idempotency, scope, key, token); err != nil {
		s.d.Log.WarnContext(c, "releasing an idempotency key failed; its lease will", "request_id", requestID(c), "error", err)
	}
}

// keyedFingerprint is what an applied plan keeps of the Idempotency-Key
// request that applied it: the request's fingerprint bound to the API key
// and the key itself, so that PostgreSQL answers as a replay only a retry
// with the same key, by the same API key, of the same request.
func (s *Server) keyedFingerprint(scope, key, fp string) string {
	m := hmac.New(sha256.New, s.d.IdempotencySecret)
	for _, f := range []string{"keenauth-idempotency-key-v1", scope, key, fp} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// replayed is the answer to a retry: the stored response, marked as a
// replay. A stored problem is the only answer whose code is not known, so
// it is read from the stored body here, for the access log.
func replayed(stored *idempotency.Response) response {
	r := response{status: stored.Status, header: make(http.Header, len(stored.Header)+1), body: stored.Body}
	// The values share one backing array: one allocation, not one a header
	// (each capped, so that an append to one cannot write over the next).
	values := make([]string, 0, len(stored.Header)+1)
	for k, v := range stored.Header {
		values = append(values, v)
		r.header[textproto.CanonicalMIMEHeaderKey(k)] = values[len(values)-1 : len(values) : len(values)]
	}
	values = append(values, "true")
	r.header["Idempotent-Replayed"] = values[len(values)-1:]
	if r.status >= 400 && strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
		var p struct {
			Code config.Code `json:"code"`
		}
		if json.Unmarshal(r.body, &p) == nil && problemCodeFormat.MatchString(string(p.Code)) {
			r.code = p.Code
		}
	}
	return r
}

// admit runs the rate checks of a plan creation, a restore or an apply
// (§10): config_plan and config_plan_inflight in one atomic step, then for
// an apply the fleet's capacity of concurrent applies (§6 row 7). They fail
// open when Redis fails. The headers of §10 are set on the response
// whatever the outcome. It returns the release of what it took.
func (s *Server) admit(ctx context.Context, c *gin.Context, apply bool) (release func(), err error) {
	h, err := s.limit(ctx, c, s.d.Limiter, s.d.RateLimit)
	if err != nil {
		return nil, err
	}
	if !apply || s.d.Fleet == nil {
		return h.release, nil
	}
	lease := s.d.RateLimit.WithDefaults().Lease
	ok, retry, fslot, err := s.d.Fleet.Acquire(ctx)
	if err != nil {
		h.release()
		return nil, fmt.Errorf("fleet capacity: %w", plans.ErrUnavailable)
	}
	if !ok {
		s.observeFleetSaturated()
		h.release()
		secs := max(int(math.Ceil(retry.Seconds())), 1)
		return nil, &config.Error{Code: config.CodeServiceUnavailable, Detail: "the fleet's apply capacity is saturated; nothing was written",
			Extra: map[string]any{"retry_after": secs}}
	}
	stopFleet := ratelimit.Hold(fslot, lease/3, s.leaseLost("fleet"))
	// Both slots go back in one round trip to Redis.
	return func() { stopFleet(); h.stop(); ratelimit.Release(fslot, h.slot) }, nil
}

// admitPreview runs the rate checks of a preview of plan creation (§14):
// config_preview and config_preview_inflight, its own, and no fleet slot.
func (s *Server) admitPreview(ctx context.Context, c *gin.Context) (release func(), err error) {
	h, err := s.limit(ctx, c, s.d.PreviewLimiter, s.d.PreviewRateLimit)
	if err != nil {
		return nil, err
	}
	return h.release, nil
}

// held is the in-flight slot of an admitted request and the renewal that
// holds it.
type held struct {
	slot ratelimit.Slot
	stop func()
}

// release stops renewing the slot and gives it back.
func (h held) release() { h.stop(); h.slot.Release() }

// limit admits a request under the rate and concurrency policies of cfg,
// decided by lim, and sets their headers whatever the outcome; it fails
// open when Redis fails. The in-flight slot taken is held (renewed) until
// it is released.
func (s *Server) limit(ctx context.Context, c *gin.Context, lim ratelimit.Limiter, cfg ratelimit.Config) (held, error) {
	if lim == nil {
		return held{ratelimit.NoSlot, func() {}}, nil
	}
	d, slot, err := lim.Admit(ctx, actor(c).EnvironmentID)
	if err != nil {
		return held{}, fmt.Errorf("rate limit: %w", plans.ErrUnavailable)
	}
	s.observeRateLimit(d)
	c.Header("RateLimit-Policy", ratelimit.PolicyHeader(cfg))
	if !d.FailedOpen {
		c.Header("RateLimit", ratelimit.RateLimitHeader(cfg, d))
	}
	if !d.Allowed {
		secs := max(int(math.Ceil(d.RetryAfter.Seconds())), 1)
		return held{}, &config.Error{Code: config.CodeRateLimited,
			Detail: fmt.Sprintf("the %s limit of this environment is reached; retry in %d s", d.Policy, secs),
			Extra:  map[string]any{"retry_after": secs, "policy": d.Policy}}
	}
	lease := cfg.WithDefaults().Lease
	return held{slot, ratelimit.Hold(slot, lease/3, s.leaseLost("inflight"))}, nil
}
