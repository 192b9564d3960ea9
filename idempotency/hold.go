package idempotency

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Holder keeps an in-flight record claimed while its request runs. Hold
// starts it; Stop ends it.
type Holder struct {
	cancel context.CancelFunc
	done   chan struct{}
	stop   sync.Once
	lost   atomic.Bool
}

// Hold renews the lease of the record that token owns every lease/3, until
// Stop is called, so that a request running longer than one lease keeps its
// key. Renewals are detached from the cancellation of ctx (the operation may
// outlive its client) and each is bounded by a short timeout.
//
// A renewal that fails to reach the store is simply tried again at the next
// tick: the lease still has two thirds of its length to run. A renewal
// refused with ErrLeaseLost ends the holding; LeaseLost then reports true,
// and the caller should expect Complete to be refused too (it still answers
// the client with the real response).
//
// Call Stop before CompleteWithoutCancel or ReleaseWithoutCancel, so that no
// renewal races with them.
func Hold(ctx context.Context, s Store, scope, key, token string, lease time.Duration) *Holder {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &Holder{cancel: cancel, done: make(chan struct{})}
	interval := max(lease/3, time.Millisecond)
	timeout := min(interval, finishTimeout)
	go func() {
		defer close(h.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, timeout)
			err := s.Renew(rctx, scope, key, token, lease)
			rcancel()
			if errors.Is(err, ErrLeaseLost) {
				h.lost.Store(true)
				return
			}
		}
	}()
	return h
}

// Stop ends the renewals and waits for the renewing goroutine to exit. It
// may be called more than once.
func (h *Holder) Stop() {
	h.stop.Do(h.cancel)
	<-h.done
}

// LeaseLost reports whether a renewal found that the token no longer owns
// the record (its lease had passed and the record expired or was claimed
// again).
func (h *Holder) LeaseLost() bool {
	return h.lost.Load()
}
