package idempotency

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// MemoryStore keeps idempotency records in the process, for the
// single-process dev mode. Its semantics are those of RedisStore, with the
// records' lifetimes measured by the injected clock.
type MemoryStore struct {
	now func() time.Time

	mu        sync.Mutex
	records   map[memoryKey]*memoryRecord
	lastSweep time.Time
}

var _ Store = (*MemoryStore)(nil)

type memoryKey struct{ scope, key string }

type memoryRecord struct {
	done        bool
	fingerprint string
	owner       string
	resp        Response
	expires     time.Time
}

// sweepEvery is how often, by the injected clock, expired records are
// dropped from the map; between sweeps they are only skipped.
const sweepEvery = time.Minute

// NewMemoryStore returns an empty store; now is its clock (time.Now if nil).
func NewMemoryStore(now func() time.Time) *MemoryStore {
	if now == nil {
		now = time.Now
	}
	return &MemoryStore{now: now, records: map[memoryKey]*memoryRecord{}}
}

// live returns the record at k if it has not expired. The caller holds mu.
func (s *MemoryStore) live(k memoryKey, now time.Time) *memoryRecord {
	if now.Sub(s.lastSweep) >= sweepEvery {
		s.lastSweep = now
		for rk, r := range s.records {
			if !now.Before(r.expires) {
				delete(s.records, rk)
			}
		}
	}
	r, ok := s.records[k]
	if !ok {
		return nil
	}
	if !now.Before(r.expires) {
		delete(s.records, k)
		return nil
	}
	return r
}

// owned returns the in-flight record at k if token owns it. The caller holds mu.
func (s *MemoryStore) owned(k memoryKey, token string, now time.Time) *memoryRecord {
	r := s.live(k, now)
	if r == nil || r.done || r.owner != token {
		return nil
	}
	return r
}

// Claim implements Store.
func (s *MemoryStore) Claim(ctx context.Context, scope, key, fingerprint string, lease time.Duration) (ClaimResult, error) {
	if err := checkTTL("lease", lease); err != nil {
		return ClaimResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return ClaimResult{}, unavailable("claim", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	k := memoryKey{scope, key}
	r := s.live(k, now)
	switch {
	case r == nil:
		token := newToken()
		s.records[k] = &memoryRecord{fingerprint: fingerprint, owner: token, expires: now.Add(lease)}
		return ClaimResult{Outcome: Claimed, Token: token}, nil
	case r.fingerprint != fingerprint:
		return ClaimResult{Outcome: Mismatch}, nil
	case r.done:
		resp := cloneResponse(r.resp)
		return ClaimResult{Outcome: Replay, Response: &resp}, nil
	default:
		return ClaimResult{Outcome: InUse, RetryAfter: retryAfter(r.expires.Sub(now))}, nil
	}
}

// Renew implements Store.
func (s *MemoryStore) Renew(ctx context.Context, scope, key, token string, lease time.Duration) error {
	if err := checkTTL("lease", lease); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return unavailable("renew", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r := s.owned(memoryKey{scope, key}, token, now)
	if r == nil {
		return errLeaseLost("renew")
	}
	r.expires = now.Add(lease)
	return nil
}

// Complete implements Store.
func (s *MemoryStore) Complete(ctx context.Context, scope, key, token string, resp Response, retention time.Duration) error {
	if err := checkTTL("retention", retention); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return unavailable("complete", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r := s.owned(memoryKey{scope, key}, token, now)
	if r == nil {
		return errLeaseLost("complete")
	}
	r.done = true
	r.owner = ""
	r.resp = cloneResponse(resp)
	r.expires = now.Add(retention)
	return nil
}

// Release implements Store.
func (s *MemoryStore) Release(ctx context.Context, scope, key, token string) error {
	if err := ctx.Err(); err != nil {
		return unavailable("release", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := memoryKey{scope, key}
	if s.owned(k, token, s.now()) == nil {
		return errLeaseLost("release")
	}
	delete(s.records, k)
	return nil
}

// cloneResponse copies resp so that the stored record shares nothing with
// the caller, as a round trip through Redis would. An absent header comes
// back empty, as from Redis.
func cloneResponse(resp Response) Response {
	header := maps.Clone(resp.Header)
	if header == nil {
		header = map[string]string{}
	}
	return Response{Status: resp.Status, Header: header, Body: slices.Clone(resp.Body)}
}
